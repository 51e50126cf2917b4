// The demo's PNG icons (192 and 512 px, maskable), drawn here at build time so the repository
// carries no binary art: a tray with an arrow going into it, white on the theme colour.
import { deflateSync } from 'node:zlib';

const BACKGROUND = [0x1f, 0x5f, 0x8b];
const FOREGROUND = [0xff, 0xff, 0xff];

/** Whether the point (x, y) in [0, 1]² is part of the white glyph. */
function glyph(x, y) {
  const trayOuter = x >= 0.24 && x <= 0.76 && y >= 0.5 && y <= 0.76;
  const trayInner = x > 0.3 && x < 0.7 && y >= 0.5 && y < 0.7;
  const shaft = x >= 0.46 && x <= 0.54 && y >= 0.2 && y <= 0.46;
  const head = y >= 0.4 && y <= 0.6 && Math.abs(x - 0.5) <= (0.6 - y) * 0.9;
  return (trayOuter && !trayInner) || shaft || head;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes) {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** An RGB PNG of `size`×`size` pixels. */
export function iconPng(size) {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolour RGB
  const rows = Buffer.alloc(size * (1 + size * 3));
  for (let y = 0; y < size; y++) {
    const row = y * (1 + size * 3);
    rows[row] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      const colour = glyph((x + 0.5) / size, (y + 0.5) / size) ? FOREGROUND : BACKGROUND;
      rows.set(colour, row + 1 + x * 3);
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A rollup plugin that emits `icon-192.png` and `icon-512.png`. */
export function demoIcons() {
  return {
    name: 'demo-icons',
    generateBundle() {
      for (const size of [192, 512]) {
        this.emitFile({ type: 'asset', fileName: `icon-${size}.png`, source: iconPng(size) });
      }
    },
  };
}
