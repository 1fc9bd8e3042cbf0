/**
 * The few HTML pages the broker shows in the authorization window, when it cannot send the user
 * back to the extension. Every interpolated value is escaped.
 */
const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

export function errorPage(title: string, detail: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Baton: ${escapeHtml(title)}</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; padding: 0 1rem; color: #1b1f24; background: #fff; }
  h1 { font-size: 1.25rem; }
  @media (prefers-color-scheme: dark) { body { color: #e6e8eb; background: #15181c; } }
</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(detail)}</p>
<p>You can close this window and try again from the Baton extension.</p>
</main>
</body>
</html>
`;
}
