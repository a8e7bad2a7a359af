/**
 * A small subset of OpenAPI v3 (the part structural CRD schemas use) plus a
 * type-level mapping from a schema literal to the TypeScript type it
 * describes. This is what makes the CRD schema the single source of truth:
 * `FromSchema<typeof x>` is the TS type, `x` itself goes into the CRD.
 */

export interface StringSchema {
  readonly type: 'string';
  readonly description?: string;
  readonly enum?: readonly string[];
  readonly pattern?: string;
  readonly format?: 'date-time';
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly default?: string;
  readonly 'x-kubernetes-validations'?: readonly ValidationRule[];
}
export interface IntegerSchema {
  readonly type: 'integer';
  readonly description?: string;
  readonly format?: 'int32' | 'int64';
  readonly minimum?: number;
  readonly maximum?: number;
  readonly default?: number;
}
export interface BooleanSchema {
  readonly type: 'boolean';
  readonly description?: string;
  readonly default?: boolean;
}
export interface ArraySchema {
  readonly type: 'array';
  readonly description?: string;
  readonly items: Schema;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly 'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
}
export interface ValidationRule {
  readonly rule: string;
  readonly message: string;
}
export interface ObjectSchema {
  readonly type: 'object';
  readonly description?: string;
  readonly properties?: { readonly [name: string]: Schema };
  readonly required?: readonly string[];
  readonly additionalProperties?: Schema;
  readonly maxProperties?: number;
  readonly default?: Record<string, never>;
  readonly 'x-kubernetes-validations'?: readonly ValidationRule[];
  /** Kept as sent, unchecked by the apiserver: only for fields the controller refuses with a message. */
  readonly 'x-kubernetes-preserve-unknown-fields'?: true;
}
/** Any value, kept as sent: only for fields whose old forms the controller reports with a message of its own. */
export interface AnySchema {
  readonly 'x-kubernetes-preserve-unknown-fields': true;
  readonly description?: string;
}
export type Schema = StringSchema | IntegerSchema | BooleanSchema | ArraySchema | ObjectSchema | AnySchema;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

type RequiredKeys<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;

type ObjectFrom<P, R> = Simplify<
  { -readonly [K in keyof P & R]: FromSchema<P[K]> } & {
    -readonly [K in Exclude<keyof P, R>]?: FromSchema<P[K]>;
  }
>;

/** The TypeScript type a schema literal (declared `as const`) describes. */
export type FromSchema<S> = S extends { readonly type: 'object'; readonly properties: infer P }
  ? ObjectFrom<P, RequiredKeys<S>>
  : S extends { readonly type: 'object'; readonly additionalProperties: infer A }
    ? Record<string, FromSchema<A>>
    : S extends { readonly type: 'object' }
      ? Record<string, unknown>
      : S extends { readonly type: 'array'; readonly items: infer I }
        ? FromSchema<I>[]
        : S extends { readonly type: 'string'; readonly enum: readonly (infer E)[] }
          ? E
          : S extends { readonly type: 'string' }
            ? string
            : S extends { readonly type: 'integer' }
              ? number
              : S extends { readonly type: 'boolean' }
                ? boolean
                : unknown;

/** Checks at compile time that a literal is a valid Schema while keeping its literal type. */
export function schema<const S extends Schema>(s: S): S {
  return s;
}
