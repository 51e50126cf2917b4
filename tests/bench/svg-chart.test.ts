import { describe, expect, it } from 'vitest';
import {
  type ChartPanel,
  escapeXml,
  lineChartSvg,
  niceTicks,
} from '../../bench/browser/svg-chart.ts';

describe('niceTicks: round axis ticks from 0 up to the data', () => {
  const cases = [
    { name: 'steps of 1, 2 or 5 times a power of ten', max: 9.3, ticks: [0, 2, 4, 6, 8, 10] },
    { name: 'a max on a tick ends there', max: 500, ticks: [0, 100, 200, 300, 400, 500] },
    { name: 'a max just past a tick takes one more', max: 501, ticks: [0, 200, 400, 600] },
    { name: 'fractions without float drift', max: 0.3, ticks: [0, 0.1, 0.2, 0.3] },
    { name: 'nothing to scale gives a unit axis', max: 0, ticks: [0, 1] },
    { name: 'a value that is not a number gives a unit axis', max: Number.NaN, ticks: [0, 1] },
  ];
  it.each(cases)('$name', ({ max, ticks }) => {
    expect(niceTicks(max)).toEqual(ticks);
  });
});

describe('escapeXml: labels cannot break the document', () => {
  it('escapes the five characters markup gives meaning to', () => {
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe(
      '&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;',
    );
  });
});

/** The `points` attribute of each polyline, as numbers. */
function polylines(svg: string): Array<Array<[number, number]>> {
  return [...svg.matchAll(/<polyline[^>]* points="([^"]*)"/g)].map((m) =>
    (m[1] ?? '').split(' ').map((pair) => pair.split(',').map(Number) as [number, number]),
  );
}

describe('lineChartSvg: small multiples of line series', () => {
  const panel: ChartPanel = {
    title: '+200 ms per request, 500 rows',
    yMax: 500,
    series: [
      {
        label: 'fast',
        color: '#1b7837',
        note: 'all 500 in 1 s',
        points: [
          [0, 0],
          [0.5, 250],
          [1, 500],
        ],
      },
      {
        label: 'slow & steady',
        color: '#b2182b',
        dash: '2 3',
        points: [
          [0, 0],
          [10, 500],
        ],
      },
    ],
  };
  const options = { title: 'Rows applied', xLabel: 'seconds', yLabel: 'rows' };

  it('is one well-formed SVG document with a title', () => {
    const svg = lineChartSvg([panel], options);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('<title>Rows applied</title>');
    expect(svg.match(/<g class="panel">/g)).toHaveLength(1);
  });

  it('draws each series as one polyline on the panel scale shared by its series', () => {
    const [fast, slow] = polylines(lineChartSvg([panel], options));
    // Both start at the origin; the slow series ends at the right edge, the fast one at a tenth.
    expect(fast?.[0]).toEqual(slow?.[0]);
    const origin = fast?.[0] ?? [0, 0];
    const right = slow?.at(-1) ?? [0, 0];
    const fastEnd = fast?.at(-1) ?? [0, 0];
    expect(right[0] - origin[0]).toBeCloseTo(10 * (fastEnd[0] - origin[0]), 0);
    // Both reach the same height: 500 rows.
    expect(fastEnd[1]).toBe(right[1]);
    expect(right[1]).toBeLessThan(origin[1]);
  });

  it('rises with the rows applied: higher y values are drawn higher up', () => {
    const [fast] = polylines(lineChartSvg([panel], options));
    const ys = (fast ?? []).map(([, y]) => y);
    expect(ys).toEqual([...ys].sort((a, b) => b - a));
  });

  it('names every series in the legend, its note after it, escaped', () => {
    const svg = lineChartSvg([panel], options);
    expect(svg).toContain('>fast: all 500 in 1 s</text>');
    expect(svg).toContain('>slow &amp; steady</text>');
    expect(svg).toContain('stroke-dasharray="2 3"');
  });

  it('scales each panel to its own series', () => {
    const small: ChartPanel = {
      title: 'small',
      series: [
        {
          label: 'a',
          color: '#000',
          points: [
            [0, 0],
            [1, 10],
          ],
        },
      ],
    };
    const svg = lineChartSvg([panel, small], options);
    const [, , a] = polylines(svg);
    const [fast] = polylines(svg);
    // The small panel's 10 rows reach its top as the other's 500 reach its own.
    expect(a?.at(-1)?.[1]).toBe(fast?.at(-1)?.[1]);
    expect(svg.match(/<g class="panel">/g)).toHaveLength(2);
  });

  it('draws a marker as a labelled vertical line, the x axis reaching it', () => {
    const short: ChartPanel = {
      title: 'short',
      marker: { x: 3, label: 'target: 3 s' },
      series: [
        {
          label: 'a',
          color: '#000',
          points: [
            [0, 0],
            [1, 10],
          ],
        },
      ],
    };
    const svg = lineChartSvg([short], options);
    const marker = /<line class="marker" x1="([\d.]+)"/.exec(svg);
    const [line] = polylines(svg);
    const origin = line?.[0]?.[0] ?? 0;
    const end = line?.at(-1)?.[0] ?? 0;
    // The series ends at 1 s, the marker stands at 3 s: three times as far from the origin.
    expect(Number(marker?.[1]) - origin).toBeCloseTo(3 * (end - origin), 0);
    expect(svg).toContain('>target: 3 s</text>');
  });

  it('says so in a panel with no series', () => {
    const svg = lineChartSvg([{ title: '+50 ms: not run', series: [] }], options);
    expect(svg).toContain('not measured in this run');
    expect(polylines(svg)).toEqual([]);
  });

  it('lays out panels side by side up to the columns asked, then wraps', () => {
    const width = (svg: string) => Number(/width="(\d+)"/.exec(svg)?.[1]);
    const height = (svg: string) => Number(/height="(\d+)"/.exec(svg)?.[1]);
    const three = lineChartSvg([panel, panel, panel], options);
    const wrapped = lineChartSvg([panel, panel, panel], { ...options, columns: 2 });
    expect(width(three)).toBeGreaterThan(width(wrapped));
    expect(height(wrapped)).toBeGreaterThan(height(three));
  });
});
