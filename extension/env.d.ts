interface ImportMetaEnv {
  /** The broker's URL at build time; wxt.config.ts validates it. */
  readonly WXT_BROKER_URL?: string;
  /** The origins whose content scripts may use the API (docs/extending.md); wxt.config.ts checks them. */
  readonly WXT_API_ORIGINS?: string;
}
