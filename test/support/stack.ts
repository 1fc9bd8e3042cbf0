/**
 * Not a way to start anything: test/image/image.test.ts still imports the client secret from
 * here. Once it imports it from world.ts, this file goes.
 */
export { CLIENT_SECRET } from './world.ts';
