import type { Request } from 'express';

/**
 * The few HTML pages the broker shows in the authorization window, when it cannot send the user
 * back to the extension: in the user's language (en, fr or nl, as the popup speaks), in the tone
 * of the popup. Every interpolated value is escaped.
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

export const PAGE_LOCALES = ['en', 'fr', 'nl'] as const;
export type PageLocale = (typeof PAGE_LOCALES)[number];

/** What went wrong, as a page says it. */
export type Page =
  | { kind: 'bad_parameter'; parameter: string }
  | { kind: 'redirect_not_allowed' }
  | { kind: 'no_flow' }
  | { kind: 'unavailable' }
  | { kind: 'server_error' };

interface Words {
  invalidLink: string;
  badParameter: (parameter: string) => string;
  redirectNotAllowed: string;
  noFlow: string;
  unavailableTitle: string;
  unavailable: string;
  serverErrorTitle: string;
  serverError: string;
  close: string;
}

const WORDS: Record<PageLocale, Words> = {
  en: {
    invalidLink: 'This sign-in link is not valid',
    badParameter: (parameter) => `The parameter "${parameter}" is missing or not valid.`,
    redirectNotAllowed:
      'The parameter "redirect_uri" is not an extension redirect URL this broker allows.',
    noFlow: 'No sign-in is in progress in this browser.',
    unavailableTitle: 'Baton is unavailable',
    unavailable: 'The broker cannot reach its store right now.',
    serverErrorTitle: 'Something went wrong',
    serverError: 'The broker could not complete the sign-in.',
    close: 'You can close this window and try again from the Baton extension.',
  },
  fr: {
    invalidLink: "Ce lien de connexion n'est pas valide",
    badParameter: (parameter) => `Le paramètre "${parameter}" est manquant ou incorrect.`,
    redirectNotAllowed:
      'Le paramètre "redirect_uri" n\'est pas une adresse de retour d\'extension autorisée par ce serveur.',
    noFlow: "Aucune connexion n'est en cours dans ce navigateur.",
    unavailableTitle: 'Baton est indisponible',
    unavailable: 'Le serveur de Baton ne parvient pas à joindre son stockage pour le moment.',
    serverErrorTitle: 'Un problème est survenu',
    serverError: "Le serveur de Baton n'a pas pu terminer la connexion.",
    close: "Vous pouvez fermer cette fenêtre et réessayer depuis l'extension Baton.",
  },
  nl: {
    invalidLink: 'Deze aanmeldlink is niet geldig',
    badParameter: (parameter) => `De parameter "${parameter}" ontbreekt of is ongeldig.`,
    redirectNotAllowed:
      'De parameter "redirect_uri" is geen terugkeeradres van een extensie dat deze server toestaat.',
    noFlow: 'Er is in deze browser geen aanmelding bezig.',
    unavailableTitle: 'Baton is niet beschikbaar',
    unavailable: 'De server van Baton kan zijn opslag op dit moment niet bereiken.',
    serverErrorTitle: 'Er ging iets mis',
    serverError: 'De server van Baton kon de aanmelding niet voltooien.',
    close: 'U kunt dit venster sluiten en het opnieuw proberen vanuit de Baton-extensie.',
  },
};

/**
 * The language of a page: the sign-in's own (the pending flow's, or the one /auth/start was asked
 * for) when there is one, else the best of en, fr and nl by Accept-Language, else English.
 */
export function pageLocale(req: Request, flowLocale?: string): PageLocale {
  if (flowLocale !== undefined && (PAGE_LOCALES as readonly string[]).includes(flowLocale))
    return flowLocale as PageLocale;
  const accepted = req.acceptsLanguages(...PAGE_LOCALES);
  return accepted === false ? 'en' : (accepted as PageLocale);
}

export function errorPage(page: Page, locale: PageLocale): string {
  const words = WORDS[locale];
  const [title, detail] =
    page.kind === 'bad_parameter'
      ? [words.invalidLink, words.badParameter(page.parameter)]
      : page.kind === 'redirect_not_allowed'
        ? [words.invalidLink, words.redirectNotAllowed]
        : page.kind === 'no_flow'
          ? [words.invalidLink, words.noFlow]
          : page.kind === 'unavailable'
            ? [words.unavailableTitle, words.unavailable]
            : [words.serverErrorTitle, words.serverError];
  return `<!doctype html>
<html lang="${locale}">
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
<p>${escapeHtml(words.close)}</p>
</main>
</body>
</html>
`;
}
