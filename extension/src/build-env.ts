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
