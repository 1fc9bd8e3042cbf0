import type { Request } from 'express';
import type { PendingFlow } from '../oauth/flows.ts';
import type { BrowserFlows } from '../oauth/sign-in.ts';

declare module 'express-session' {
  interface SessionData {
    flows?: PendingFlow[];
  }
}

/**
 * The browser's pending flows, where the authorization window's cookie session (express-session,
 * app.ts) keeps them: read as last saved, and saved before the answer goes out.
 */
export const browserFlows = (req: Request): BrowserFlows => ({
  get flows() {
    return req.session.flows;
  },
  save: (flows) => {
    req.session.flows = flows;
    return new Promise((resolve, reject) =>
      req.session.save((error) => (error ? reject(error) : resolve())),
    );
  },
});
