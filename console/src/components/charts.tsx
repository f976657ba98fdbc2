// Owns the dashboard's two charts, drawn as plain SVG (no chart library): horizontal bars for counts
// by category, and paired columns for two amounts per day. Each carries a text description for
// screen readers and scales to its container.
export interface Bar {
  label: string;
  value: number;
  tone: string;
}

export function HorizontalBars({ title, bars }: { title: string; bars: Bar[] }) {
  const max = Math.max(1, ...bars.map((b) => b.value));
  const row = 28;
  const labelWidth = 150;
  const width = 520;
  const height = bars.length * row + 8;
  const description = bars.map((b) => `${b.label}: ${b.value}`).join(', ');
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${title}. ${description}`}>
        {bars.map((b, i) => {
          const y = i * row + 4;
          const barWidth = ((width - labelWidth - 50) * b.value) / max;
          return (
            <g key={b.label}>
              <text x={labelWidth - 8} y={y + row / 2 + 4} text-anchor="end" class="chart-label">
                {b.label}
              </text>
              <rect
                x={labelWidth}
                y={y + 4}
                width={Math.max(barWidth, b.value > 0 ? 2 : 0)}
                height={row - 10}
                class={`fill-${b.tone}`}
                rx="3"
              />
              <text x={labelWidth + barWidth + 6} y={y + row / 2 + 4} class="chart-value">
                {b.value}
              </text>
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

export interface DayPair {
  date: string;
  a: number;
  b: number;
}

export function PairedColumns({
  title,
  days,
  labels,
  format,
}: {
  title: string;
  days: DayPair[];
  labels: [string, string];
  format: (value: number) => string;
}) {
  const width = 640;
  const height = 220;
  const left = 8;
  const bottom = 28;
  const top = 12;
  const max = Math.max(1, ...days.flatMap((d) => [d.a, d.b]));
  const slot = (width - left) / Math.max(1, days.length);
  const column = Math.max(4, slot * 0.34);
  const scale = (v: number) => ((height - bottom - top) * v) / max;
  const description = days
    .map((d) => `${d.date}: ${labels[0]} ${format(d.a)}, ${labels[1]} ${format(d.b)}`)
    .join('; ');
  return (
    <figure class="chart">
      <figcaption>
        {title}
        <span class="legend">
          <span class="swatch fill-info" aria-hidden="true" /> {labels[0]}
          <span class="swatch fill-good" aria-hidden="true" /> {labels[1]}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${title}. ${description}`}>
        <line x1={left} x2={width} y1={height - bottom} y2={height - bottom} class="axis" />
        {days.map((d, i) => {
          const x = left + i * slot + slot / 2;
          return (
            <g key={d.date}>
              <rect
                x={x - column}
                y={height - bottom - scale(d.a)}
                width={column}
                height={scale(d.a)}
                class="fill-info"
                rx="2"
              >
                <title>{`${d.date} ${labels[0]}: ${format(d.a)}`}</title>
              </rect>
              <rect
                x={x}
                y={height - bottom - scale(d.b)}
                width={column}
                height={scale(d.b)}
                class="fill-good"
                rx="2"
              >
                <title>{`${d.date} ${labels[1]}: ${format(d.b)}`}</title>
              </rect>
              <text x={x} y={height - 10} text-anchor="middle" class="chart-label">
                {d.date.slice(8)}
              </text>
            </g>
          );
        })}
      </svg>
    </figure>
  );
}
