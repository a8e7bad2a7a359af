/**
 * A small certificate authority for the harness's sharded kcp
 * (kcp-sharded.ts), made with the openssl command line (Node has no
 * certificate builder): CAs, and client or serving certificates they sign.
 * P-256 keys, valid for 30 days; files in the directory given.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Ca {
  cert: string;
  key: string;
}

export function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    const err = e as { code?: string; stderr?: Buffer };
    if (err.code === 'ENOENT') throw new Error('openssl is needed to make the harness\'s certificates (Debian package openssl)');
    throw new Error(`openssl ${args[0]}: ${err.stderr?.toString().trim() ?? String(e)}`);
  }
}

export function makeCa(dir: string, file: string, cn: string): Ca {
  const cert = join(dir, `${file}.crt`);
  const key = join(dir, `${file}.key`);
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '30', '-subj', `/CN=${cn}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature', '-keyout', key, '-out', cert]);
  return { cert, key };
}

/**
 * A certificate signed by `ca`: a client one (CN = user, O = groups), or with
 * `hosts` a serving one for 127.0.0.1 and localhost (and the `ips` given).
 */
export function makeLeaf(dir: string, ca: Ca, file: string, opts: { cn: string; orgs?: string[]; hosts?: boolean; ips?: string[] }): Ca {
  const cert = join(dir, `${file}.crt`);
  const key = join(dir, `${file}.key`);
  const csr = join(dir, `${file}.csr`);
  const ext = join(dir, `${file}.ext`);
  const subj = `/CN=${opts.cn}${(opts.orgs ?? []).map((o) => `/O=${o}`).join('')}`;
  openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', subj, '-keyout', key, '-out', csr]);
  writeFileSync(ext, opts.hosts
    ? `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${['127.0.0.1', ...(opts.ips ?? [])].map((ip) => `IP:${ip}`).join(',')},DNS:localhost\n`
    : 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
  openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-days', '30', '-extfile', ext, '-out', cert]);
  return { cert, key };
}

