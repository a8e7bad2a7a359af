/**
 * Self-signed serving certificates for loopback servers of the harness (the
 * Tekton Results API, the simulated kubelet's log endpoint). Made with the
 * openssl command line (Node has no certificate builder); each is its own
 * trust anchor, so clients trust exactly that certificate.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ServingCert {
  certPath: string;
  keyPath: string;
  certPem: string;
  keyPem: string;
}

/** A P-256 key and a certificate for 127.0.0.1 and localhost (plus `names`), valid for 30 days, in `dir`. */
export function makeServingCert(dir: string, commonName: string, names: string[] = []): ServingCert {
  mkdirSync(dir, { recursive: true });
  const certPath = join(dir, 'tls.crt');
  const keyPath = join(dir, 'tls.key');
  const san = ['IP:127.0.0.1', 'DNS:localhost', ...names.map((n) => `DNS:${n}`)].join(',');
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '30',
        '-subj', `/CN=${commonName}`, '-addext', `subjectAltName=${san}`, '-keyout', keyPath, '-out', certPath],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  } catch (e) {
    const err = e as { code?: string; stderr?: Buffer };
    if (err.code === 'ENOENT') throw new Error('openssl is needed to make the harness\'s serving certificates (Debian package openssl)');
    throw new Error(`openssl could not make a certificate for ${commonName}: ${err.stderr?.toString().trim() ?? String(e)}`);
  }
  return { certPath, keyPath, certPem: readFileSync(certPath, 'utf8'), keyPem: readFileSync(keyPath, 'utf8') };
}
