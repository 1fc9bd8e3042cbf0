/** The open-loop generator's thread (loadgen.ts, `openLoopInterleaved`): runs one load, posts its results. */
import { parentPort, workerData } from 'node:worker_threads';
import { generate, type InterleavedOptions } from './loadgen.ts';

parentPort?.postMessage(await generate(workerData as InterleavedOptions));
