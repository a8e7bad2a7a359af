/**
 * The text forms of three value types of Tekton's specs, re-implemented from
 * their Go source: resource.Quantity (ParseQuantity, then the canonical form
 * MarshalJSON writes), time.Duration (ParseDuration and String, behind
 * metav1.Duration) and metav1.Time (time.Parse of RFC 3339, then MarshalJSON
 * in UTC).
 *
 * Its own file: each is a self-contained parser and printer that knows
 * nothing of Tekton or of the rest of Go's JSON; tekton-decode.ts calls them
 * when it decodes such a field, so that the checksum holds what Go would
 * write. Pure, no I/O.
 */

// ------------------------------------------------------------------ resource.Quantity (k8s.io/apimachinery/pkg/api/resource)

type QFormat = 'DecimalExponent' | 'BinarySI' | 'DecimalSI';
const DEC_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BIN_SUFFIX: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const MAX_INT64 = 2n ** 63n - 1n;

/** Go's strings.TrimSpace (unicode.IsSpace). */
export function goTrimSpace(s: string): string {
  const space = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
  return s.replace(new RegExp(`^${space}+|${space}+$`, 'g'), '');
}

/** parseQuantityString. */
function scanQuantity(s: string): { positive: boolean; value: string; num: string; denom: string; suffix: string } {
  let positive = true;
  let pos = 0;
  const end = s.length;
  const digit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  if (s[0] === '-') {
    positive = false;
    pos++;
  } else if (s[0] === '+') pos++;
  while (s[pos] === '0') pos++;
  if (pos >= end) return { positive, value: '0', num: '0', denom: '', suffix: '' };
  let i = pos;
  while (i < end && digit(s[i])) i++;
  if (i >= end) return { positive, value: s, num: s.slice(pos), denom: '', suffix: '' };
  let num = s.slice(pos, i);
  pos = i;
  if (num === '') num = '0';
  let denom = '';
  if (s[pos] === '.') {
    pos++;
    i = pos;
    while (i < end && digit(s[i])) i++;
    denom = s.slice(pos, i);
    if (i >= end) return { positive, value: s, num, denom, suffix: '' };
    pos = i;
  }
  const value = s.slice(0, pos);
  const suffixStart = pos;
  i = pos;
  while (i < end && 'eEinumkKMGTP'.includes(s[i]!)) i++;
  if (i >= end) return { positive, value, num, denom, suffix: s.slice(suffixStart) };
  pos = i;
  if (s[pos] === '-' || s[pos] === '+') pos++;
  for (i = pos; i < end; i++) if (!digit(s[i])) throw new Error('quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'');
  return { positive, value, num, denom, suffix: s.slice(suffixStart) };
}

/** ParseQuantity then MarshalJSON: the string Go writes for the quantity s. */
export function quantityString(s: string): string {
  if (s.length === 0) throw new Error('quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'');
  if (s === '0') return '0';
  const { positive, value, num, denom, suffix } = scanQuantity(s);
  let base: number;
  let exponent: number;
  let format: QFormat;
  if (suffix in DEC_SUFFIX) [base, exponent, format] = [10, DEC_SUFFIX[suffix]!, 'DecimalSI'];
  else if (suffix in BIN_SUFFIX) [base, exponent, format] = [2, BIN_SUFFIX[suffix]!, 'BinarySI'];
  else if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?[0-9]+$/.test(suffix.slice(1))) {
    const e = Number(suffix.slice(1));
    // Go keeps an int32 of the exponent; beyond what a quantity could sensibly hold, refuse.
    if (!Number.isSafeInteger(e) || Math.abs(e) > 1000) throw new Error('exponent out of the range reproduced here');
    [base, exponent, format] = [10, e, 'DecimalExponent'];
  } else throw new Error("unable to parse quantity's suffix");

  let precision = 0;
  let scale = 0;
  let mantissa = 1n;
  if (format !== 'BinarySI') {
    scale = exponent;
    precision = 18 - (num.length + denom.length);
  } else if (exponent >= 0 && denom.length === 0) {
    mantissa = 1n << BigInt(exponent);
    precision = 15 - num.length - Math.trunc((exponent * 3) / 10) - 1;
  } else precision = -1;

  if (precision >= 0) {
    scale -= denom.length;
    if (scale >= -9) {
      const shifted = num + denom;
      const v = BigInt(shifted);
      if (v > MAX_INT64) throw new Error('unable to parse numeric part of quantity');
      const product = v * mantissa;
      if (product <= MAX_INT64) {
        const result = positive ? product : -product;
        // The canonical form: Go keeps the string as written.
        if (format === 'BinarySI' ? exponent % 10 === 0 && (v & 7n) !== 0n : scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0') return s;
        return canonicalQuantity(result, scale, format);
      }
    }
  }

  // inf.Dec path: value is [sign]digits[.digits].
  const m = /^([+-]?)([0-9]*)(?:\.([0-9]*))?$/.exec(value);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw new Error('unable to parse numeric part of quantity');
  let unscaled = BigInt((m[2] || '0') + (m[3] ?? ''));
  let decScale = (m[3] ?? '').length; // value = unscaled × 10^-decScale
  if (base === 10) decScale -= exponent;
  else unscaled *= 1n << BigInt(exponent);
  const negative = m[1] === '-' && unscaled !== 0n;
  // Round the magnitude up to a multiple of 10^-9.
  if (unscaled !== 0n && decScale > 9) {
    const d = 10n ** BigInt(decScale - 9);
    unscaled = unscaled / d + (unscaled % d === 0n ? 0n : 1n);
    decScale = 9;
  }
  if (format === 'BinarySI') {
    const exceeds = decScale >= 0 ? unscaled > MAX_INT64 * 10n ** BigInt(decScale) : unscaled * 10n ** BigInt(-decScale) > MAX_INT64;
    if (exceeds) [unscaled, decScale] = [MAX_INT64, 0];
    const belowOne = decScale > 0 && unscaled < 10n ** BigInt(decScale);
    if (belowOne && unscaled > 0n) format = 'DecimalSI';
  }
  return canonicalQuantity(negative ? -unscaled : unscaled, -decScale, format);
}

/** CanonicalizeBytes of mant × 10^exp10. */
function canonicalQuantity(mant: bigint, exp10: number, format: QFormat): string {
  if (mant === 0n) return '0';
  if (format === 'BinarySI') {
    const integral = exp10 >= 0 || mant % 10n ** BigInt(-exp10) === 0n;
    const n = integral ? (exp10 >= 0 ? mant * 10n ** BigInt(exp10) : mant / 10n ** BigInt(-exp10)) : 0n;
    if (!integral || (n > -1024n && n < 1024n)) format = 'DecimalSI';
    else {
      let v = n;
      let times = 0;
      while (v % 1024n === 0n && v !== 0n) {
        v /= 1024n;
        times++;
      }
      const sfx = Object.entries(BIN_SUFFIX).find(([, e]) => e === times * 10)?.[0] ?? '';
      return `${v}${sfx}`;
    }
  }
  let m = mant;
  let e = exp10;
  while (m % 10n === 0n) {
    m /= 10n;
    e++;
  }
  while (((e % 3) + 3) % 3 !== 0) {
    m *= 10n;
    e--;
  }
  if (format === 'DecimalExponent') return e === 0 ? `${m}` : `${m}e${e}`;
  const sfx = Object.entries(DEC_SUFFIX).find(([, x]) => x === e)?.[0] ?? '';
  return `${m}${sfx}`;
}

// ------------------------------------------------------------------ time.Duration, metav1.Time

const UNITS: Record<string, bigint> = { ns: 1n, us: 1000n, 'µs': 1000n, 'μs': 1000n, ms: 1000000n, s: 1000000000n, m: 60000000000n, h: 3600000000000n };

/** time.ParseDuration, in nanoseconds; undefined where Go errs. */
export function parseGoDuration(orig: string): bigint | undefined {
  let s = orig;
  let neg = false;
  const LIMIT = 1n << 63n;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') return undefined;
  let d = 0n;
  const digit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  while (s !== '') {
    if (!(s[0] === '.' || digit(s[0]))) return undefined;
    let i = 0;
    let v = 0n;
    for (; i < s.length && digit(s[i]); i++) {
      if (v > LIMIT / 10n) return undefined;
      v = v * 10n + BigInt(s.charCodeAt(i) - 48);
      if (v > LIMIT) return undefined;
    }
    const pre = i > 0;
    s = s.slice(i);
    let f = 0n;
    let scale = 1;
    let post = false;
    if (s[0] === '.') {
      s = s.slice(1);
      let overflow = false;
      for (i = 0; i < s.length && digit(s[i]); i++) {
        if (overflow) continue;
        if (f > (LIMIT - 1n) / 10n) {
          overflow = true;
          continue;
        }
        const y = f * 10n + BigInt(s.charCodeAt(i) - 48);
        if (y > LIMIT) {
          overflow = true;
          continue;
        }
        f = y;
        scale *= 10;
      }
      post = i > 0;
      s = s.slice(i);
    }
    if (!pre && !post) return undefined;
    for (i = 0; i < s.length && !(s[i] === '.' || digit(s[i])); i++);
    if (i === 0) return undefined;
    const unit = UNITS[s.slice(0, i)];
    s = s.slice(i);
    if (unit === undefined) return undefined;
    if (v > LIMIT / unit) return undefined;
    v *= unit;
    if (f > 0n) {
      v += BigInt(Math.trunc(Number(f) * (Number(unit) / scale)));
      if (v > LIMIT) return undefined;
    }
    d += v;
    if (d > LIMIT) return undefined;
  }
  if (neg) return -d;
  return d > LIMIT - 1n ? undefined : d;
}

/** time.Duration.String. */
export function formatGoDuration(d: bigint): string {
  const neg = d < 0n;
  let u = neg ? -d : d;
  const frac = (v: bigint, prec: number): [string, bigint] => {
    let out = '';
    let print = false;
    for (let i = 0; i < prec; i++) {
      const digit = v % 10n;
      print = print || digit !== 0n;
      if (print) out = `${digit}${out}`;
      v /= 10n;
    }
    return [print ? `.${out}` : '', v];
  };
  let out: string;
  if (u < 1000000000n) {
    if (u === 0n) return '0s';
    const [unit, prec] = u < 1000n ? ['ns', 0] : u < 1000000n ? ['µs', 3] : ['ms', 6];
    const [f, rest] = frac(u, prec);
    out = `${rest}${f}${unit}`;
  } else {
    const [f, secs] = frac(u, 9);
    u = secs;
    out = `${u % 60n}${f}s`;
    u /= 60n;
    if (u > 0n) {
      out = `${u % 60n}m${out}`;
      u /= 60n;
      if (u > 0n) out = `${u}h${out}`;
    }
  }
  return neg ? `-${out}` : out;
}

/**
 * metav1.Time: time.Parse(time.RFC3339) then MarshalJSON (UTC, whole
 * seconds; the zero time is null). Parse's general path, which it falls back
 * to, also takes a one-digit hour, a comma before the fraction and zone
 * offsets up to +24:60.
 */
export function rfc3339(s: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi, se] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i])) as [number, number, number, number, number, number];
  const days = [31, y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (mo < 1 || mo > 12 || d < 1 || d > days[mo - 1]! || h > 23 || mi > 59 || se > 59) return undefined;
  let offset = 0;
  if (m[8] !== undefined) {
    const [oh, om] = [Number(m[9]), Number(m[10])];
    if (oh > 24 || om > 60) return undefined;
    offset = (m[8] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi - offset, se, 0);
  // 0001-01-01T00:00:00Z is Go's zero time, which MarshalJSON writes as null (nanoseconds: 9 digits at most count).
  const zero = new Date(0);
  zero.setUTCFullYear(1, 0, 1);
  if (date.getTime() === zero.getTime() && !/[1-9]/.test((m[7] ?? '').slice(0, 9))) return 'null';
  const year = date.getUTCFullYear();
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  const yyyy = year < 0 ? `-${p(-year, 4)}` : p(year, 4); // Go's appendInt(year, 4)
  return `"${yyyy}-${p(date.getUTCMonth() + 1)}-${p(date.getUTCDate())}T${p(date.getUTCHours())}:${p(date.getUTCMinutes())}:${p(date.getUTCSeconds())}Z"`;
}
