import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';

/**
 * The commands a document gives an operator, read the way a shell would split them, so that the
 * tests check what a reader would run: docs/operations.md's `kubectl` lines, docs/upgrading.md's,
 * an overlay's comments.
 */

/** A markdown file of docs/. */
export const readDoc = (name: string): Promise<string> =>
  readFile(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

/** The text under a markdown heading (`### Kubernetes`), up to the next heading of its level or higher. */
export function section(markdown: string, heading: string): string {
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`no heading ${heading}`);
  // A heading outside the code blocks (where `#` starts a shell comment).
  let fenced = false;
  const end = lines.findIndex((line, index) => {
    if (line.startsWith('```')) fenced = !fenced;
    return !fenced && index > start && /^#+ /.test(line) && /^#+/.exec(line)![0].length <= level;
  });
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** The shell of a markdown text's ```sh blocks, in order. */
export const shellBlocks = (markdown: string): string[] =>
  [...markdown.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```/gm)].map((found) => found[1]!);

/** The text of a YAML file's comments, as commands (`#   kubectl …` lines). */
export const commentText = (yaml: string): string =>
  yaml
    .split('\n')
    .filter((line) => /^\s*#/.test(line))
    .map((line) => line.replace(/^\s*#\s?/, ''))
    .join('\n');

/**
 * Words of a shell line, quotes removed, `$(…)` and variables kept as written; a word `|` between
 * commands of a pipeline. Comments (`#` at a word's start) end the line.
 */
function words(line: string): string[] {
  const found: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    if (quote === "'") {
      if (char === quote) quote = undefined;
      else word += char;
    } else if (
      char === '\\' &&
      i + 1 < line.length &&
      (quote === undefined || '"\\$`'.includes(line[i + 1]!))
    ) {
      word = (word ?? '') + line[++i];
    } else if (quote === '"') {
      if (char === quote) quote = undefined;
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      word ??= '';
    } else if (/\s/.test(char)) {
      if (word !== undefined) found.push(word);
      word = undefined;
    } else if (char === '#' && word === undefined) break;
    else if (char === '|' && word === undefined) found.push('|');
    else word = (word ?? '') + char;
  }
  if (quote !== undefined) throw new Error(`an unclosed ${quote}: ${line}`);
  if (word !== undefined) found.push(word);
  return found;
}

/** One `kubectl` command: its namespace (`-n`, `--namespace`) and its other words. */
export interface Kubectl {
  namespace?: string;
  args: string[];
  /** The line as written (continuations joined). */
  line: string;
}

/**
 * Every `kubectl` command of some shell text, in order: each line that starts with one, and the
 * pipeline it leads (`kubectl kustomize … | kubectl apply -f -`).
 */
export function kubectlCommands(shell: string): Kubectl[] {
  const commands: Kubectl[] = [];
  for (const line of shell.replace(/\\\n\s*/g, ' ').split('\n')) {
    if (!/^\s*kubectl\s/.test(line)) continue;
    const all = words(line);
    const pipeline: string[][] = [[]];
    for (const word of all)
      if (word === '|') pipeline.push([]);
      else pipeline.at(-1)!.push(word);
    for (const [program, ...rest] of pipeline) {
      if (program !== 'kubectl') continue;
      const command: Kubectl = { args: [], line: line.trim() };
      for (let i = 0; i < rest.length; i++) {
        const word = rest[i]!;
        if (word === '-n' || word === '--namespace') {
          const namespace = rest[++i];
          if (namespace === undefined) throw new Error(`${word} without a namespace: ${line}`);
          command.namespace = namespace;
        } else if (word.startsWith('--namespace=')) command.namespace = word.slice(12);
        else command.args.push(word);
      }
      commands.push(command);
    }
  }
  return commands;
}

/** A key of a Secret as `kubectl create secret generic` makes it: from a file, or a literal. */
export type SecretSource = { file: string } | { literal: string };

/** A `kubectl create secret generic NAME --from-file=… --from-literal=…` command. */
export interface CreateSecret {
  namespace?: string;
  name: string;
  keys: Record<string, SecretSource>;
  line: string;
}

/**
 * The Secrets some `kubectl` commands make, each with where its keys come from, as kubectl reads
 * the flags: `--from-file=KEY=path`, `--from-file=path` (the key is the file's name),
 * `--from-literal=KEY=value`. A key given twice, or a flag this parser does not know, throws: the
 * document must be read as kubectl would, or not at all.
 */
export function createdSecrets(commands: Kubectl[]): CreateSecret[] {
  return commands
    .filter(({ args }) => args[0] === 'create' && args[1] === 'secret' && args[2] === 'generic')
    .map(({ namespace, args, line }) => {
      const [, , , name, ...flags] = args;
      if (name === undefined || name.startsWith('-')) throw new Error(`no Secret name: ${line}`);
      const keys: Record<string, SecretSource> = {};
      const add = (key: string, source: SecretSource) => {
        if (key in keys) throw new Error(`${key} twice: ${line}`);
        keys[key] = source;
      };
      for (let i = 0; i < flags.length; i++) {
        const flag = flags[i]!;
        const [option = '', ...valueParts] = flag.split('=');
        const value = valueParts.length > 0 ? valueParts.join('=') : flags[++i];
        if (value === undefined) throw new Error(`${option} without a value: ${line}`);
        if (option === '--from-file') {
          const at = value.indexOf('=');
          if (at < 0) add(basename(value), { file: value });
          else add(value.slice(0, at), { file: value.slice(at + 1) });
        } else if (option === '--from-literal') {
          const at = value.indexOf('=');
          if (at < 1) throw new Error(`--from-literal without KEY=: ${line}`);
          add(value.slice(0, at), { literal: value.slice(at + 1) });
        } else if (option === '--dry-run' || option === '-o' || option === '--output') continue;
        else throw new Error(`a flag this parser does not know, ${option}: ${line}`);
      }
      return { ...(namespace === undefined ? {} : { namespace }), name, keys, line };
    });
}

/**
 * The data of each Secret the commands make, as kubectl would send it: each file's bytes as they
 * are (a trailing newline included), each literal as written. `read` gives a file's bytes.
 */
export async function secretData(
  secrets: CreateSecret[],
  read: (path: string) => Promise<Buffer>,
): Promise<Map<string, Record<string, Buffer>>> {
  const made = new Map<string, Record<string, Buffer>>();
  for (const { name, keys } of secrets) {
    if (made.has(name)) throw new Error(`the Secret ${name} is made twice`);
    const data: Record<string, Buffer> = {};
    for (const [key, source] of Object.entries(keys))
      data[key] = 'file' in source ? await read(source.file) : Buffer.from(source.literal);
    made.set(name, data);
  }
  return made;
}
