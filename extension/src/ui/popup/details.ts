import type { Display } from '../../present/user-record.ts';
import { h, type Child } from '../dom.ts';
import { formatDate, formatNumber, languageName, t } from '../i18n.ts';
import { fieldLabel } from './field-labels.ts';

/**
 * The "All details" renderer: any value of the user record (text, dates, numbers, languages,
 * lists and nested objects, already bounded by present/user-record.ts) as accessible markup.
 */
export function display(d: Display): Child {
  switch (d.kind) {
    case 'text':
      return d.text;
    case 'date':
      return h('time', { datetime: d.iso }, formatDate(d.iso, d.withTime));
    case 'number':
      return formatNumber(d.value);
    case 'identifier':
      return h('span', { translate: 'no' }, d.text);
    case 'boolean':
      return t(d.value ? 'valueYes' : 'valueNo');
    case 'language':
      return languageName(d.code);
    case 'empty':
      return h('span', { class: 'muted', 'aria-label': t('valueEmpty') }, '—');
    case 'elided':
      return h('span', { class: 'muted' }, '…');
    case 'list': {
      const scalar = d.items.every((item) => item.kind !== 'list' && item.kind !== 'object');
      const more = d.more > 0 ? t('valueMore', formatNumber(d.more)) : null;
      return h(
        scalar ? 'ul' : 'ol',
        { class: scalar ? 'inline-list' : 'nested-list' },
        d.items.map((item) => h('li', {}, display(item))),
        more === null ? null : h('li', { class: 'muted' }, more),
      );
    }
    case 'object':
      return h(
        'dl',
        { class: 'tree tree--nested' },
        d.fields.map((field) => detailRow(fieldLabel(field), field.value)),
        d.more > 0
          ? [
              h('dt', { class: 'muted' }, '…'),
              h('dd', { class: 'muted' }, t('valueMore', formatNumber(d.more))),
            ]
          : null,
      );
  }
}

const isGroup = (d: Display) =>
  d.kind === 'object' ||
  (d.kind === 'list' && d.items.some((i) => i.kind === 'object' || i.kind === 'list'));

/**
 * One row of a definition list: a label and its value (a group spans the row). `fact` names a
 * recognised field (`data-fact`, for tests).
 */
export function detailRow(label: string, value: Display, fact?: string): Child {
  const group = isGroup(value) ? 'is-group' : null;
  return [
    h('dt', { class: group }, label),
    h('dd', { class: group, 'data-fact': fact }, display(value)),
  ];
}
