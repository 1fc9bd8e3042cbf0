/** The open-loop generator's thread (loadgen.ts, `openLoop`): runs one load and posts its result. */
import { parentPort, workerData } from 'node:worker_threads';
import { generate, type OpenLoopOptions } from './loadgen.ts';

parentPort?.postMessage(await generate(workerData as OpenLoopOptions));
