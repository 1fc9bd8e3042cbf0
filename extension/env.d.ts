interface ImportMetaEnv {
  /** The broker's URL at build time; wxt.config.ts validates it. */
  readonly WXT_BROKER_URL?: string;
}
