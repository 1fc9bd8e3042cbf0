import type { Locale } from '@baton/shared';
import type { View } from '../../state/view.ts';

/** What the screens and cards need to draw one view and to act on it. */
export interface Screen {
  readonly view: View;
  /** The language of the sign-in pages chosen in the picker (or the default). */
  readonly locale: Locale;
  /** Actions under way, by key (`refresh`, `signOut`, `disconnect:<id>`…). */
  readonly busy: ReadonlySet<string>;
  /** Cards whose "All details" is open; kept across re-renders. */
  readonly openDetails: Set<string>;
  readonly now: number;
  chooseLocale(locale: Locale): void;
  connect(reconnectId: string | null): void;
  refresh(): void;
  signOut(): void;
  disconnect(id: string): void;
}
