import type { Account, License, Locale } from './accounts.ts';

/** HTML that is already safe. Everything else interpolated into `markup` is escaped. */
export interface Html {
  readonly html: string;
}
type Value = string | number | Html | readonly Html[];

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);

const render = (value: Value): string => {
  if (typeof value === 'string') return escapeHtml(value);
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return value.map((item: Html) => item.html).join('');
  return (value as Html).html;
};

export function markup(strings: TemplateStringsArray, ...values: Value[]): Html {
  return { html: strings.reduce((out, text, i) => out + render(values[i - 1] ?? '') + text) };
}

/** Why an authorization request is refused with an error page (never a redirect). */
export type AuthorizeProblem =
  | { kind: 'unknown_client' }
  | { kind: 'unregistered_redirect_uri' }
  | { kind: 'unsupported_response_type' }
  | { kind: 'missing'; param: string }
  | { kind: 'repeated'; param: string }
  | { kind: 'expired' };

interface Strings {
  loginTitle: string;
  loginIntro: (client: string) => string;
  email: string;
  password: string;
  login: string;
  badCredentials: string;
  licenseTitle: string;
  licenseIntro: string;
  seats: (count: number) => string;
  continue: string;
  noLicenseChosen: string;
  consentTitle: string;
  consentText: (client: string, license: string) => string;
  signedInAs: (email: string) => string;
  authorize: string;
  deny: string;
  errorTitle: string;
  problem: (problem: AuthorizeProblem) => string;
}

const STRINGS: Record<Locale, Strings> = {
  fr: {
    loginTitle: 'Connexion',
    loginIntro: (client) =>
      `${client} souhaite accéder à votre licence. Connectez-vous pour continuer.`,
    email: 'Adresse e-mail',
    password: 'Mot de passe',
    login: 'Se connecter',
    badCredentials: 'Adresse e-mail ou mot de passe incorrect.',
    licenseTitle: 'Choisissez une licence',
    licenseIntro: 'Quelle licence souhaitez-vous connecter ?',
    seats: (count) => (count === 1 ? '1 utilisateur' : `${count} utilisateurs`),
    continue: 'Continuer',
    noLicenseChosen: 'Veuillez choisir une licence.',
    consentTitle: 'Autoriser l’accès',
    consentText: (client, license) =>
      `${client} demande l’accès aux données de la licence « ${license} ».`,
    signedInAs: (email) => `Connecté en tant que ${email}`,
    authorize: 'Autoriser',
    deny: 'Refuser',
    errorTitle: 'Demande d’autorisation invalide',
    problem: (problem) => {
      switch (problem.kind) {
        case 'unknown_client':
          return 'Cette application n’est pas connue (client_id).';
        case 'unregistered_redirect_uri':
          return 'L’adresse de retour (redirect_uri) n’est pas enregistrée pour cette application.';
        case 'unsupported_response_type':
          return 'Le paramètre response_type doit valoir « code ».';
        case 'missing':
          return `Le paramètre ${problem.param} est manquant.`;
        case 'repeated':
          return `Le paramètre ${problem.param} apparaît plusieurs fois.`;
        case 'expired':
          return 'Cette demande a expiré. Recommencez depuis l’application.';
      }
    },
  },
  nl: {
    loginTitle: 'Aanmelden',
    loginIntro: (client) => `${client} wil toegang tot uw licentie. Meld u aan om verder te gaan.`,
    email: 'E-mailadres',
    password: 'Wachtwoord',
    login: 'Aanmelden',
    badCredentials: 'Onjuist e-mailadres of wachtwoord.',
    licenseTitle: 'Kies een licentie',
    licenseIntro: 'Welke licentie wilt u koppelen?',
    seats: (count) => (count === 1 ? '1 gebruiker' : `${count} gebruikers`),
    continue: 'Doorgaan',
    noLicenseChosen: 'Kies een licentie.',
    consentTitle: 'Toegang toestaan',
    consentText: (client, license) =>
      `${client} vraagt toegang tot de gegevens van de licentie ‘${license}’.`,
    signedInAs: (email) => `Aangemeld als ${email}`,
    authorize: 'Toestaan',
    deny: 'Weigeren',
    errorTitle: 'Ongeldige autorisatieaanvraag',
    problem: (problem) => {
      switch (problem.kind) {
        case 'unknown_client':
          return 'Deze toepassing is niet bekend (client_id).';
        case 'unregistered_redirect_uri':
          return 'Het terugkeeradres (redirect_uri) is niet geregistreerd voor deze toepassing.';
        case 'unsupported_response_type':
          return 'De parameter response_type moet "code" zijn.';
        case 'missing':
          return `De parameter ${problem.param} ontbreekt.`;
        case 'repeated':
          return `De parameter ${problem.param} komt meer dan één keer voor.`;
        case 'expired':
          return 'Deze aanvraag is verlopen. Begin opnieuw vanuit de toepassing.';
      }
    },
  },
};

const STYLE = `body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1d2433}
label{display:block;margin:.75rem 0 .25rem}input[type=email],input[type=password]{width:100%;padding:.4rem}
button{margin:1rem .5rem 0 0;padding:.5rem 1rem}.error{color:#a40000}fieldset{border:0;padding:0}
.license{display:block;margin:.5rem 0}table{border-collapse:collapse}td,th{padding:.2rem .6rem;text-align:left}`;

function layout(lang: string, title: string, body: Html): string {
  return markup`<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${{ html: STYLE }}</style>
</head>
<body>
${body}
</body>
</html>
`.html;
}

const actionPath = (locale: Locale, step: 'login' | 'license' | 'decision'): string =>
  `/${locale}/api/oauth2/authorize/${step}`;

const transactionField = (id: string): Html =>
  markup`<input type="hidden" id="transaction" name="transaction" value="${id}">`;

const errorLine = (message: string | undefined): Html =>
  message === undefined
    ? markup``
    : markup`<p class="error" id="error" role="alert">${message}</p>`;

export function loginPage(input: {
  locale: Locale;
  transactionId: string;
  clientName: string;
  email?: string;
  error?: boolean;
}): string {
  const t = STRINGS[input.locale];
  return layout(
    input.locale,
    t.loginTitle,
    markup`<h1>${t.loginTitle}</h1>
<p>${t.loginIntro(input.clientName)}</p>
${errorLine(input.error ? t.badCredentials : undefined)}
<form method="post" action="${actionPath(input.locale, 'login')}">
${transactionField(input.transactionId)}
<label for="email">${t.email}</label>
<input type="email" id="email" name="email" autocomplete="username" required value="${input.email ?? ''}">
<label for="password">${t.password}</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit" id="login" name="login">${t.login}</button>
</form>`,
  );
}

export function licensePage(input: {
  locale: Locale;
  transactionId: string;
  account: Account;
  error?: boolean;
}): string {
  const t = STRINGS[input.locale];
  const checked = input.account.licenses.length === 1 ? markup` checked` : markup``;
  const options = input.account.licenses.map(
    (license) => markup`
<label class="license" for="license-${license.id}">
<input type="radio" id="license-${license.id}" name="license" value="${license.id}"${checked}>
${license.name} — ${license.city}, ${t.seats(license.seats)}
</label>`,
  );
  return layout(
    input.locale,
    t.licenseTitle,
    markup`<h1>${t.licenseTitle}</h1>
<p>${t.signedInAs(input.account.email)}</p>
${errorLine(input.error ? t.noLicenseChosen : undefined)}
<form method="post" action="${actionPath(input.locale, 'license')}">
${transactionField(input.transactionId)}
<fieldset>
<legend>${t.licenseIntro}</legend>${options}
</fieldset>
<button type="submit" id="continue" name="continue">${t.continue}</button>
</form>`,
  );
}

export function consentPage(input: {
  locale: Locale;
  transactionId: string;
  clientName: string;
  account: Account;
  license: License;
}): string {
  const t = STRINGS[input.locale];
  return layout(
    input.locale,
    t.consentTitle,
    markup`<h1>${t.consentTitle}</h1>
<p id="consent-text">${t.consentText(input.clientName, input.license.name)}</p>
<p>${t.signedInAs(input.account.email)}</p>
<form method="post" action="${actionPath(input.locale, 'decision')}">
${transactionField(input.transactionId)}
<button type="submit" id="authorize" name="decision" value="authorize">${t.authorize}</button>
<button type="submit" id="deny" name="decision" value="deny">${t.deny}</button>
</form>`,
  );
}

export function errorPage(locale: Locale, problem: AuthorizeProblem): string {
  const t = STRINGS[locale];
  return layout(
    locale,
    t.errorTitle,
    markup`<h1>${t.errorTitle}</h1>
<p class="error" id="error" role="alert">${t.problem(problem)}</p>`,
  );
}

/** For a path that is not an authorization page, such as an unsupported locale: in both languages. */
export function notFoundPage(): string {
  return layout(
    'fr',
    'Page introuvable — Pagina niet gevonden',
    markup`<h1>Page introuvable</h1>
<p>Les pages d’autorisation existent en français (/fr/) et en néerlandais (/nl/).</p>
<section lang="nl">
<h1>Pagina niet gevonden</h1>
<p>De autorisatiepagina’s bestaan in het Frans (/fr/) en in het Nederlands (/nl/).</p>
</section>`,
  );
}

/** GET /: the demo accounts, for people running Baton locally. */
export function homePage(input: {
  accounts: readonly Account[];
  password: string;
  apiUrl: (licenseId: string) => string;
}): string {
  const rows = input.accounts.flatMap((account) =>
    account.licenses.map(
      (license) => markup`
<tr><td>${account.email}</td><td>${account.language}</td><td>${license.name} (${license.id})</td><td><code>${input.apiUrl(license.id)}</code></td></tr>`,
    ),
  );
  return layout(
    'en',
    'Baton provider sandbox',
    markup`<h1>Baton provider sandbox</h1>
<p>A stand-in for the OAuth provider. Every demo account's password is <code id="password">${input.password}</code>.</p>
<table>
<thead><tr><th>Email</th><th>Language</th><th>License</th><th>api_url</th></tr></thead>
<tbody>${rows}
</tbody>
</table>`,
  );
}
