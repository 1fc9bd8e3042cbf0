import { parseApiOrigins, type ApiOrigin } from './api-origins.ts';
import { DEFAULT_BROKER_URL, parseBrokerUrl } from './broker-url.ts';

/**
 * The broker the extension was built for (`WXT_BROKER_URL`, checked by wxt.config.ts at build
 * time), normalised. The options page can point the extension at another one.
 */
export const BUILD_BROKER_URL: string = resolve(import.meta.env.WXT_BROKER_URL);

function resolve(raw: string | undefined): string {
  const parsed = parseBrokerUrl(raw ?? DEFAULT_BROKER_URL);
  return parsed.ok ? parsed.url : DEFAULT_BROKER_URL;
}

/**
 * The origins whose content scripts may use the integrator's API: the list wxt.config.ts checked
 * and wrote in at build time (`WXT_API_ORIGINS`, and in a development build http://localhost and
 * http://127.0.0.1 too), so an invalid list never ships. Marked pure, so that the popup, which
 * imports this module for the broker URL only, leaves it out.
 */
export const BUILD_API_ORIGINS: readonly ApiOrigin[] = /* @__PURE__ */ originsOf(
  import.meta.env.WXT_API_ORIGINS,
);

function originsOf(raw: string | undefined): readonly ApiOrigin[] {
  const parsed = parseApiOrigins(raw);
  return parsed.ok ? parsed.origins : [];
}
