// The browser the tests drive: the headless Chromium shipped inside the `@sparticuz/chromium` npm
// package (a devDependency pinned in package-lock.json), so `npm install` is all a machine needs and
// every machine runs the same browser with the same fonts. CHROMIUM_PATH names another Chromium to
// drive instead (its own fonts then come from the system).
//
// The package unpacks its browser into os.tmpdir() and, once /tmp/chromium exists, answers that file
// whatever version wrote it, even half written by another run. Here it unpacks once per package
// version into .tmp/chromium-<version>/: in a child process whose TMPDIR is a private staging folder,
// which is then renamed into place whole, so concurrent runs never start a partial or stale binary.
// The browser needs libnss3 and libnspr4 from the operating system (on the Debian image already).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

export interface Browser {
  executablePath: string;
  /** Environment for the browser process: the bundled fonts, when the bundled browser is used. */
  env: Record<string, string>;
  /** What the tests print and record: the executable and where it came from. */
  source: string;
}

/** The package's version, read from its package.json beside its build. */
function bundledVersion(): string {
  const dir = path.resolve(path.dirname(fileURLToPath(import.meta.resolve('@sparticuz/chromium'))), '..');
  return (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Unpacks the package's browser, fonts and software GL into `stage` with the package's own code, for
 * use once `stage` is renamed to `target`.
 */
async function unpack(stage: string, target: string): Promise<void> {
  const script =
    "const { default: chromium } = await import('@sparticuz/chromium');" +
    'process.stdout.write(await chromium.executablePath());';
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: { ...process.env, TMPDIR: stage },
    encoding: 'utf8',
  });
  if (stdout !== path.join(stage, 'chromium'))
    throw new Error(`@sparticuz/chromium unpacked to ${stdout}, not into ${stage}`);
  // Its own fonts.conf names folders under /tmp; this one names the unpacked fonts and a cache beside.
  const fonts = path.join(target, 'fonts').replace(/&/g, '&amp;').replace(/</g, '&lt;');
  fs.writeFileSync(
    path.join(stage, 'fonts', 'fonts.conf'),
    '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n' +
      `  <dir>${path.join(fonts, 'fonts')}</dir>\n  <cachedir>${path.join(fonts, 'cache')}</cachedir>\n` +
      '</fontconfig>\n',
  );
}

/** The Chromium to drive: CHROMIUM_PATH when set, else the npm package's, unpacked on first use. */
export async function browser(): Promise<Browser> {
  const override = process.env.CHROMIUM_PATH;
  if (override) return { executablePath: override, env: {}, source: `${override} (CHROMIUM_PATH)` };

  const version = bundledVersion();
  const target = path.join(ROOT, '.tmp', `chromium-${version}`);
  if (!fs.existsSync(target)) {
    const stage = `${target}.${process.pid}-${randomBytes(4).toString('hex')}`;
    fs.mkdirSync(stage, { recursive: true });
    try {
      await unpack(stage, target);
      fs.renameSync(stage, target);
    } catch (error) {
      fs.rmSync(stage, { recursive: true, force: true });
      // Another run moved its copy into place first: use that one.
      if (!fs.existsSync(target)) throw error;
    }
  }
  return {
    executablePath: path.join(target, 'chromium'),
    env: { FONTCONFIG_PATH: path.join(target, 'fonts') },
    source: `${path.join(target, 'chromium')} (@sparticuz/chromium ${version})`,
  };
}
