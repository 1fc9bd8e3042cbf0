/**
 * Who sent a message to the background, as the browser says it (`runtime.MessageSender`). The
 * browser fills these fields in; a page cannot choose them. Content scripts share the extension's
 * id with its own pages, so the id alone says only "this extension": the sender's URL is what
 * tells an extension page (the popup, the options page, an integrator's page) from a content
 * script, and which origin that content script runs on.
 */
export interface MessageSender {
  readonly id?: string | undefined;
  readonly url?: string | undefined;
  /** Chrome's; it differs from `url`'s origin for about:blank, srcdoc and sandboxed frames. */
  readonly origin?: string | undefined;
  /** Present for a sender in a tab: content scripts, and extension pages opened as tabs. */
  readonly tab?: unknown;
}

/** This extension, as the background sees it: `runtime.id`, and `runtime.getURL('/')`. */
export interface Self {
  readonly id: string;
  /** `chrome-extension://<id>/`, `moz-extension://<uuid>/`: where its pages are served from. */
  readonly pagesBase: string;
}

export type Caller =
  | { readonly kind: 'extension-page' }
  | { readonly kind: 'content-script'; readonly origin: string };

/**
 * An extension page (any page served from the extension's own origin), or a content script in an
 * http(s) page of a tab, with that page's origin; null for anything else (another extension, a
 * sender without a URL, a frame whose real origin differs from its URL's).
 */
export function callerOf(sender: MessageSender, self: Self): Caller | null {
  if (sender.id !== self.id || sender.url === undefined) return null;
  // Compared as text: `URL.origin` of an extension URL is "null" outside the browser that owns it.
  if (sender.url.startsWith(self.pagesBase)) {
    const origin = self.pagesBase.slice(0, -1);
    return sender.origin === undefined || sender.origin === origin
      ? { kind: 'extension-page' }
      : null;
  }
  let url: URL;
  try {
    url = new URL(sender.url);
  } catch {
    return null;
  }
  if (sender.tab === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    return null;
  if (sender.origin !== undefined && sender.origin !== url.origin) return null;
  return { kind: 'content-script', origin: url.origin };
}

/** The popup's and options page's messages: extension pages only, never a content script. */
export function isExtensionPage(sender: MessageSender, self: Self): boolean {
  return callerOf(sender, self)?.kind === 'extension-page';
}
