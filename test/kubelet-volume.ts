/**
 * A directory laid out and updated as the kubelet keeps a mounted Secret
 * (or a projected volume of several): each file is a symlink into `..data`,
 * itself a symlink to a timestamped directory; an update writes a new
 * timestamped directory and swaps `..data` in one rename, so a reader sees
 * the old files or the new ones, never half of each. For the tests of
 * --remote-kubeconfig-dir (src/remotes/directory.ts).
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface KubeletVolume {
  dir: string;
  /** Replaces every file at once with these (name -> content). */
  update(files: Record<string, string>): void;
  remove(): void;
}

export function kubeletVolume(prefix = 'kubelet-volume-'): KubeletVolume {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let version = 0;
  let shown: string[] = [];
  return {
    dir,
    update(files) {
      const ts = `..2026_11_27_00_00_00.${version++}`;
      mkdirSync(join(dir, ts));
      for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, ts, f), text);
      symlinkSync(ts, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      for (const f of shown) if (!(f in files)) rmSync(join(dir, f));
      for (const f of Object.keys(files)) if (!shown.includes(f)) symlinkSync(join('..data', f), join(dir, f));
      shown = Object.keys(files);
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
