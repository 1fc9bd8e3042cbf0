import { routes } from '@baton/shared';
import express, { type Request, type Response } from 'express';
import { timingSafeEqual } from 'node:crypto';
import type { Metrics } from '../ops/metrics.ts';

/** GET /metrics for a Prometheus scrape; with `token`, only with `Authorization: Bearer <token>`. */
export function metricsHandler(metrics: Metrics, token: string | undefined) {
  const expected = token === undefined ? undefined : Buffer.from(`Bearer ${token}`);
  return async (req: Request, res: Response): Promise<void> => {
    if (expected) {
      const given = Buffer.from(req.get('authorization') ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        // As any unknown route: a caller without the token learns nothing.
        res.status(404).json({ error: 'not_found', message: 'No such route.' });
        return;
      }
    }
    res.set('Cache-Control', 'no-store');
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  };
}

/** The app of METRICS_PORT: /metrics and nothing else. */
export function metricsApp(metrics: Metrics, token: string | undefined): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.get(routes.metrics, metricsHandler(metrics, token));
  app.use((_req, res) => {
    res.status(404).json({ error: 'not_found', message: 'No such route.' });
  });
  return app;
}
