import { afterAll, afterEach, expect } from 'vitest';
import { recordAnswers } from './contract.ts';

/**
 * The integration project's setup: every answer of the brokers its tests start is checked against
 * docs/openapi.json (contract.ts), and a test fails when an answer sent during it, or during the
 * hooks before it, breaks the document.
 */
const recording = recordAnswers();
const conforming = (): void => {
  expect(recording.takeProblems(), 'answers that break docs/openapi.json').toEqual([]);
};
afterEach(conforming);
afterAll(conforming);
