/**
 * Which Node.js release lines this project runs on, and a warning when the
 * running one is out of its upstream support. package.json's engines
 * (>=20.18) is what still starts; the image runs the Active LTS line
 * (Dockerfile). The dates are the Node.js release schedule's ends of life:
 * a line past its date gets no security fixes.
 */

/** End of life of each LTS line (the Node.js release schedule), as UTC dates. */
export const NODE_END_OF_LIFE: Readonly<Record<number, string>> = {
  18: '2025-04-30',
  20: '2026-04-30',
  22: '2027-04-30',
  24: '2028-04-30',
  26: '2029-04-30',
};

/** The LTS line the image runs (Dockerfile, hack/image/versions.env). */
export const IMAGE_NODE_MAJOR = 26;

export interface NodeSupport {
  major: number;
  /** 'supported': an LTS line before its end of life; 'ended': past it; 'current': an odd (never LTS) or unlisted newer line; 'old': older than engines allows. */
  status: 'supported' | 'ended' | 'current' | 'old';
  /** One line for a log or a terminal, when the status calls for one. */
  warning?: string;
}

/** What `version` (process.version, e.g. "v20.20.2") is, on `now`. */
export function nodeSupport(version: string, now: Date = new Date()): NodeSupport {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  const major = m ? Number(m[1]) : NaN;
  if (!m || major < 20 || (major === 20 && Number(m[2]) < 18)) {
    return { major, status: 'old', warning: `Node.js ${version} is older than this project supports (>= 20.18; the image runs Node.js ${IMAGE_NODE_MAJOR})` };
  }
  const eol = NODE_END_OF_LIFE[major];
  if (eol === undefined) {
    const newest = Math.max(...Object.keys(NODE_END_OF_LIFE).map(Number));
    if (major > newest && major % 2 === 0) return { major, status: 'current' };
    return { major, status: 'current', warning: `Node.js ${version} is not a long-term-support line; this project is tested on ${IMAGE_NODE_MAJOR} (the image) and runs on 20.18 and later` };
  }
  if (now.getTime() >= Date.parse(`${eol}T00:00:00Z`)) {
    return {
      major,
      status: 'ended',
      warning: `Node.js ${major} reached its end of life on ${eol} and gets no security fixes: this still runs on it (engines >= 20.18), but run a supported line (the image runs Node.js ${IMAGE_NODE_MAJOR})`,
    };
  }
  return { major, status: 'supported' };
}
