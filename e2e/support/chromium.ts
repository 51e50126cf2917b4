/**
 * The browser every Playwright run here drives (the e2e suite and the benchmarks): Debian's
 * Chromium, never a downloaded one (TOOLING), with the flags that keep a headless run quiet and
 * comparable — no sandbox (containers), no GPU, no QUIC, no background or component traffic.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
