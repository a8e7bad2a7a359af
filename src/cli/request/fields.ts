/**
 * The spec of a typed kind on the command line: `--field NAME=VALUE`
 * (repeatable) and `--spec-file FILE` (a YAML or JSON object), the fields of
 * --field over those of the file. A value that starts with `[` or `{` is JSON
 * (an array or object field); any other value is a string, as it is. Pure:
 * the caller reads the file. The API server checks the spec against the
 * kind's CRD (required fields, types, patterns) when the request is created.
 */
import { parse as parseYaml } from 'yaml';
import { FIELD_NAME_PATTERN } from '../../api/request-definition.js';
import { CliError } from './args-output.js';

const FIELD = new RegExp(FIELD_NAME_PATTERN);

/** A --field value: JSON when it starts with [ or {, else the string itself. */
export function parseFieldValue(name: string, raw: string): unknown {
  if (!raw.startsWith('[') && !raw.startsWith('{')) return raw;
  try {
    return JSON.parse(raw) as unknown;
  } catch (e) {
    throw new CliError('CLI_FIELD_INVALID', `--field ${name}: a value starting with ${raw[0]} is read as JSON, and this is not JSON (${(e as Error).message})`);
  }
}

/** One `--field NAME=VALUE`. */
export function parseField(arg: string): [string, unknown] {
  const eq = arg.indexOf('=');
  if (eq <= 0) throw new CliError('CLI_FIELD_INVALID', `--field "${arg}" is not NAME=VALUE`);
  const name = arg.slice(0, eq);
  if (!FIELD.test(name)) {
    const [top, ...key] = name.split('.');
    const hint = key.length && FIELD.test(top!) ? `; an object field takes JSON: --field ${top}='{"${key.join('.')}":"…"}'` : '';
    throw new CliError('CLI_FIELD_INVALID', `--field "${arg}": "${name}" is not a field name (letters, digits and _, not starting with a digit)${hint}`);
  }
  return [name, parseFieldValue(name, arg.slice(eq + 1))];
}

/** Every --field, in order; a name given twice is an error. */
export function parseFields(args: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of args) {
    const [k, v] = parseField(a);
    if (Object.prototype.hasOwnProperty.call(out, k)) throw new CliError('CLI_FIELD_INVALID', `--field ${k} is given more than once`);
    out[k] = v;
  }
  return out;
}

/** The text of --spec-file as spec fields; `source` names the file in messages. */
export function parseSpecText(source: string, text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = parseYaml(text);
  } catch (e) {
    throw new CliError('CLI_FIELD_INVALID', `--spec-file ${source} is not YAML or JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new CliError('CLI_FIELD_INVALID', `--spec-file ${source} holds ${v === null || v === undefined ? 'nothing' : Array.isArray(v) ? 'a list' : `a ${typeof v}`}, not an object of spec fields`);
  }
  const o = v as Record<string, unknown>;
  if ('apiVersion' in o && 'kind' in o && 'spec' in o) {
    throw new CliError('CLI_FIELD_INVALID', `--spec-file ${source} is a whole object (apiVersion, kind, spec): give only its spec, or create it with kubectl create -f`);
  }
  return o;
}

/** The spec from --spec-file (read by the caller) and --field, the latter over the former. */
export function typedSpec(fieldArgs: readonly string[], specFile?: { source: string; text: string }): Record<string, unknown> {
  const fields = parseFields(fieldArgs);
  return { ...(specFile ? parseSpecText(specFile.source, specFile.text) : {}), ...fields };
}
