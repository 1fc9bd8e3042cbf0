import { BROKER_ERROR_HEADER } from '@baton/shared';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import type {
  IncomingMessage,
  OutgoingHttpHeaders,
  RequestListener,
  ServerResponse,
} from 'node:http';

/**
 * The contract test: docs/openapi.json against the broker's real answers. `Contract` says whether
 * one answer conforms (its schemas compiled by Ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses it);
 * `observed` wraps the request listener of the in-process brokers (in-process.ts), so that
 * every answer they send to any client of a test is checked as it ends, when a setup file turned
 * checking on (contract-setup.ts, the integration project's).
 */

/** One answer of the broker, as it left. */
export interface Answer {
  method: string;
  /** The request target as the client sent it: the path and the query string. */
  url: string;
  status: number;
  /** Lower-case names, as `res.getHeaders()` gives them. */
  headers: OutgoingHttpHeaders;
  /** Undefined when it was too long to keep. */
  body: Buffer | undefined;
}

export interface Verdict {
  /** The documented answer it was checked against: `GET /connections 200`, or `UnknownRoute`. */
  matched: string;
  /** What in it breaks the document; empty when it conforms. */
  problems: string[];
}

interface HeaderObject {
  required?: boolean;
  schema?: object;
}
interface ResponseObject {
  $ref?: string;
  headers?: Record<string, HeaderObject>;
  content?: Record<string, { schema?: object }>;
}
interface OperationObject {
  responses: Record<string, ResponseObject>;
  'x-baton-pass-through'?: boolean;
}
type PathItemObject = Record<string, unknown> & { 'x-baton-rest-of-path'?: string };
export interface OpenApiDocument {
  paths: Record<string, PathItemObject>;
  components: {
    schemas?: Record<string, object>;
    responses?: Record<string, ResponseObject>;
    securitySchemes?: Record<string, { name?: string }>;
  };
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
export const OPENAPI_JSON = new URL('../../docs/openapi.json', import.meta.url);
const UNKNOWN_ROUTE = 'UnknownRoute';
const MARK = BROKER_ERROR_HEADER.toLowerCase();

interface Route {
  template: string;
  pattern: RegExp;
  item: PathItemObject;
}

/** A path template as a pattern: `{name}` is one segment, or the rest of the path when so marked. */
function routePattern(template: string, rest: string | undefined): RegExp {
  const source = template
    .split(/(\{\w+\})/)
    .map((part) => {
      const name = /^\{(\w+)\}$/.exec(part)?.[1];
      if (name === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return name === rest ? '.*' : '[^/]+';
    })
    .join('');
  return new RegExp(`^${source}$`, 's');
}

/** A media type without its parameters: `application/json; charset=utf-8` is `application/json`. */
const essence = (value: string | undefined): string | undefined =>
  value?.split(';', 1)[0]?.trim().toLowerCase();

function headerOf(answer: Answer, name: string): string | undefined {
  const value = answer.headers[name.toLowerCase()];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

export class Contract {
  readonly document: OpenApiDocument;
  readonly #routes: Route[];
  readonly #validators = new Map<object, ValidateFunction>();
  readonly #compile: (schema: object) => ValidateFunction;

  static load(file: URL = OPENAPI_JSON): Contract {
    return new Contract(JSON.parse(readFileSync(file, 'utf8')) as OpenApiDocument);
  }

  constructor(document: OpenApiDocument) {
    this.document = document;
    this.#routes = Object.entries(document.paths).map(([template, item]) => ({
      template,
      pattern: routePattern(template, item['x-baton-rest-of-path']),
      item,
    }));
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats.default(ajv);
    // References to components.schemas, rebased onto a schema of Ajv's that holds them.
    const rebased = (schema: object): object =>
      JSON.parse(
        JSON.stringify(schema).replaceAll('"#/components/schemas/', '"openapi.json#/$defs/'),
      ) as object;
    ajv.addSchema(rebased({ $id: 'openapi.json', $defs: document.components.schemas ?? {} }));
    // Each compiled when first used: the unit test (server/scripts/openapi.test.ts) compiles all.
    this.#compile = (schema) => ajv.compile(rebased(schema));
  }

  /** Every documented answer, as `Verdict.matched` names it. */
  documented(): string[] {
    const names = [UNKNOWN_ROUTE];
    for (const [template, item] of Object.entries(this.document.paths)) {
      for (const method of METHODS) {
        const operation = item[method] as OperationObject | undefined;
        for (const key of Object.keys(operation?.responses ?? {}))
          names.push(`${method.toUpperCase()} ${template} ${key}`);
      }
    }
    return names;
  }

  check(answer: Answer): Verdict {
    const path = answer.url.split('?', 1)[0] ?? '';
    const method = answer.method.toLowerCase();
    const route = this.#routes.find((candidate) => candidate.pattern.test(path));
    const operation = (METHODS as readonly string[]).includes(method)
      ? (route?.item[method] as OperationObject | undefined)
      : undefined;
    if (route === undefined || operation === undefined) {
      const unknown = this.document.components.responses?.[UNKNOWN_ROUTE];
      if (unknown === undefined) return { matched: UNKNOWN_ROUTE, problems: ['no UnknownRoute'] };
      return { matched: UNKNOWN_ROUTE, problems: this.#problems(unknown, answer) };
    }
    const key = responseKey(operation, answer);
    const matched = `${answer.method} ${route.template} ${key ?? answer.status}`;
    const response = key === undefined ? undefined : operation.responses[key];
    if (response === undefined)
      return { matched, problems: [`status ${answer.status} is not documented`] };
    return { matched, problems: this.#problems(this.#resolve(response), answer) };
  }

  #resolve(response: ResponseObject): ResponseObject {
    const name = response.$ref?.replace('#/components/responses/', '');
    return name === undefined ? response : (this.document.components.responses?.[name] ?? {});
  }

  #problems(response: ResponseObject, answer: Answer): string[] {
    const problems: string[] = [];
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const value = headerOf(answer, name);
      if (value === undefined) {
        if (header.required) problems.push(`no ${name} header`);
      } else if (header.schema && !this.#valid(header.schema, value)) {
        problems.push(`${name}: ${this.#errors(header.schema, name)}`);
      }
    }

    const type = essence(headerOf(answer, 'content-type'));
    const mark = headerOf(answer, MARK);
    const listed = Object.entries(response.headers ?? {}).find(
      ([name]) => name.toLowerCase() === MARK,
    );
    // The broker's mark and its body say the same; where the mark is listed but optional (the
    // authorization window's pages), a JSON answer is the broker's error and has it.
    if (mark !== undefined) {
      const error = type === 'application/json' ? parsed(answer.body)?.error : undefined;
      if (error !== mark)
        problems.push(`${BROKER_ERROR_HEADER}: ${mark} but the body's error is not`);
    } else if (listed !== undefined && !listed[1].required && type === 'application/json') {
      problems.push(`a JSON answer without ${BROKER_ERROR_HEADER}`);
    }

    const content = response.content;
    if (content === undefined) {
      if (answer.body !== undefined && answer.body.length > 0) problems.push('a body, none is');
      return problems;
    }
    if ('*/*' in content) return problems;
    const media = type === undefined ? undefined : content[type];
    if (media === undefined) {
      problems.push(`content type ${type ?? 'none'}, not ${Object.keys(content).join(' or ')}`);
      return problems;
    }
    // A HEAD answer's body never reaches the client; one kept too long to keep is not checked.
    if (media.schema === undefined || answer.method === 'HEAD' || answer.body === undefined)
      return problems;
    const data = type === 'application/json' ? parsed(answer.body) : answer.body.toString('utf8');
    if (data === undefined) problems.push('a body that is not JSON');
    else if (!this.#valid(media.schema, data)) problems.push(this.#errors(media.schema, 'body'));
    return problems;
  }

  #valid(schema: object, data: unknown): boolean {
    return this.#validator(schema)(data);
  }

  /** Ajv's words for the last failure: paths and rules, never the values (they may be secrets). */
  #errors(schema: object, dataVar: string): string {
    const errors = this.#validator(schema).errors ?? [];
    return errors
      .map((error) => `${dataVar}${error.instancePath} ${error.message ?? ''}`)
      .join(', ');
  }

  #validator(schema: object): ValidateFunction {
    let validate = this.#validators.get(schema);
    if (validate === undefined) {
      validate = this.#compile(schema);
      this.#validators.set(schema, validate);
    }
    return validate;
  }
}

/** Which documented response an answer is: on the API route, an unmarked answer is the default. */
function responseKey(operation: OperationObject, answer: Answer): string | undefined {
  const status = String(answer.status);
  const range = `${status[0]}XX`;
  const marked = headerOf(answer, MARK) !== undefined;
  const { responses } = operation;
  if (operation['x-baton-pass-through'])
    return !marked ? 'default' : [status, range].find((key) => key in responses);
  return [status, range, 'default'].find((key) => key in responses);
}

function parsed(body: Buffer | undefined): { error?: unknown } | undefined {
  if (body === undefined) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as { error?: unknown };
  } catch {
    return undefined;
  }
}

/** The answers of one test file's brokers, checked as they end. */
export class Recording {
  readonly contract: Contract;
  /** Every documented answer seen (`Verdict.matched`). */
  readonly seen = new Set<string>();
  #problems: string[] = [];

  constructor(contract: Contract) {
    this.contract = contract;
  }

  add(answer: Answer): void {
    let verdict: Verdict;
    try {
      verdict = this.contract.check(answer);
    } catch (error) {
      // Never into the broker's answer: the test fails instead.
      verdict = { matched: 'nothing', problems: [`the checker failed: ${String(error)}`] };
    }
    const { matched, problems } = verdict;
    this.seen.add(matched);
    if (problems.length === 0) return;
    // The path only: a query string may hold a code or a state.
    const path = (answer.url.split('?', 1)[0] ?? '').slice(0, 200);
    this.#problems.push(
      `${answer.method} ${path} answered ${answer.status} (${matched}): ${problems.join('; ')}`,
    );
  }

  /** What broke the document since the last call. */
  takeProblems(): string[] {
    return this.#problems.splice(0);
  }
}

let recording: Recording | undefined;

/** Checks every answer of the brokers started from now on in this test file. */
export function recordAnswers(contract: Contract = Contract.load()): Recording {
  recording = new Recording(contract);
  return recording;
}

/** The answers checked in this test file, when its setup asked for them. */
export function answersRecorded(): Recording | undefined {
  return recording;
}

/** Bodies longer than this are not kept (nor checked): the answers of tests are short. */
const KEEP_LIMIT = 1024 * 1024;

/**
 * A broker's request listener with each answer checked as it ends, when answers are recorded;
 * else the listener itself, so that no other suite pays for it.
 */
export function observed(listener: RequestListener): RequestListener {
  const into = recording;
  if (into === undefined) return listener;
  return (req, res) => {
    watch(req, res, (answer) => into.add(answer));
    listener(req, res);
  };
}

/**
 * Keeps what `res` writes and its head as it goes out (after every hook that sets a header late,
 * such as express-session's cookie), and hands the whole answer over as it ends, before any of it
 * can reach the client; nothing when it is cut.
 */
function watch(req: IncomingMessage, res: ServerResponse, ended: (answer: Answer) => void): void {
  // As the client sent them: Express rewrites req.url while it routes.
  const { method = '', url = '' } = req;
  const chunks: Buffer[] = [];
  let kept = 0;
  let head: { status: number; headers: OutgoingHttpHeaders } | undefined;
  let ends = 0;
  const keep = (chunk: unknown, encoding: unknown): void => {
    const bytes =
      typeof chunk === 'string'
        ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
        : chunk instanceof Uint8Array
          ? Buffer.from(chunk)
          : undefined;
    if (bytes === undefined) return;
    kept += bytes.length;
    if (kept <= KEEP_LIMIT) chunks.push(bytes);
  };
  const writeHead = res.writeHead as (...args: unknown[]) => ServerResponse;
  const write = res.write as (...args: unknown[]) => boolean;
  const end = res.end as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    const given = args.find(
      (arg) => typeof arg === 'object' && arg !== null && !Array.isArray(arg),
    );
    const headers: OutgoingHttpHeaders = { ...res.getHeaders() };
    for (const [name, value] of Object.entries(given ?? {}))
      headers[name.toLowerCase()] = value as OutgoingHttpHeaders[string];
    head = { status: Number(args[0]), headers };
    return writeHead.apply(res, args);
  }) as typeof res.writeHead;
  res.write = ((...args: unknown[]) => {
    keep(args[0], args[1]);
    return write.apply(res, args);
  }) as typeof res.write;
  res.end = ((...args: unknown[]) => {
    if (ends++ > 0) return end.apply(res, args);
    if (typeof args[0] !== 'function') keep(args[0], args[1]);
    // The head goes out within end() when nothing was written before.
    const result = end.apply(res, args);
    ended({
      method,
      url,
      status: head?.status ?? res.statusCode,
      headers: head?.headers ?? res.getHeaders(),
      body: kept <= KEEP_LIMIT ? Buffer.concat(chunks) : undefined,
    });
    return result;
  }) as typeof res.end;
}
