// Owns drawing a patient's account (view.ts) as a PDF: A4, the practice and the invoice at the top,
// patient and scheme, then one row per service (a long description wraps, whole), breaking onto new
// pages with the column heads repeated, and the totals and how to pay after the last row (on a page
// of their own when the last page has no room). Text is set in DejaVu Sans, embedded from the dejavu-fonts-ttf package, so
// names outside Latin-1 print as written. Pure: the same view and time give the same bytes.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import PDFDocument from 'pdfkit';
import type { AccountLine, AccountView } from './view.ts';

const FONT_DIR = path.join(
  path.dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')),
  'ttf',
);
let fonts: { regular: Buffer; bold: Buffer } | undefined;
function loadFonts() {
  fonts ??= {
    regular: fs.readFileSync(path.join(FONT_DIR, 'DejaVuSans.ttf')),
    bold: fs.readFileSync(path.join(FONT_DIR, 'DejaVuSans-Bold.ttf')),
  };
  return fonts;
}

const MARGIN = 40;
const PAGE_WIDTH = 595.28;
const PAGE_HEIGHT = 841.89;
const BOTTOM = PAGE_HEIGHT - MARGIN - 20;
const ROW = 14;

/** The table's columns: heading, width, alignment. */
const COLUMNS: Array<{ key: keyof AccountLine; title: string; width: number; right?: boolean }> = [
  { key: 'date', title: 'Date', width: 52 },
  { key: 'code', title: 'Item code', width: 46 },
  { key: 'modifiers', title: 'Modifiers', width: 46 },
  { key: 'diagnoses', title: 'ICD-10', width: 50 },
  { key: 'description', title: 'Description', width: 170 },
  { key: 'quantity', title: 'Qty', width: 22, right: true },
  { key: 'unitPrice', title: 'Unit price', width: 64, right: true },
  { key: 'amount', title: 'Amount', width: 65, right: true },
];

type Doc = InstanceType<typeof PDFDocument>;

const DESCRIPTION = COLUMNS.find((c) => c.key === 'description')!;
/** Lines a description may wrap onto: its 500 characters whole (the service's nature, regulation 5(h)). */
const DESCRIPTION_LINES = 12;

/** The height a row of `line` takes: its description wrapped, at most DESCRIPTION_LINES lines. */
function rowHeight(doc: Doc, line: AccountLine): number {
  doc.font('regular').fontSize(7.5);
  const text = doc.heightOfString(line.description, { width: DESCRIPTION.width - 4 });
  return Math.max(ROW, Math.min(text, DESCRIPTION_LINES * doc.currentLineHeight()) + 5);
}

function row(
  doc: Doc,
  y: number,
  cells: (c: (typeof COLUMNS)[number]) => string,
  bold = false,
  height = ROW,
): void {
  doc.font(bold ? 'bold' : 'regular').fontSize(7.5);
  let x = MARGIN;
  for (const column of COLUMNS) {
    const wraps = column === DESCRIPTION && height > ROW;
    doc.text(cells(column), x, y, {
      width: column.width - 4,
      height: wraps ? height - 4 : ROW,
      lineBreak: wraps,
      ellipsis: true,
      align: column.right ? 'right' : 'left',
    });
    x += column.width;
  }
}

function tableHead(doc: Doc, y: number): number {
  row(doc, y, (c) => c.title, true);
  doc
    .moveTo(MARGIN, y + ROW - 3)
    .lineTo(PAGE_WIDTH - MARGIN, y + ROW - 3)
    .stroke();
  return y + ROW;
}

function block(doc: Doc, lines: string[], x: number, y: number, width: number, size = 9): number {
  doc.font('regular').fontSize(size);
  let at = y;
  for (const line of lines) {
    doc.text(line, x, at, { width, lineBreak: false, ellipsis: true });
    at += size + 3;
  }
  return at;
}

function header(doc: Doc, view: AccountView): number {
  doc.font('bold').fontSize(16).text(view.title, MARGIN, MARGIN, { width: 250 });
  doc
    .font('bold')
    .fontSize(11)
    .text(view.practiceName, MARGIN, MARGIN + 24, { width: 300, lineBreak: false });
  const left = block(doc, view.practiceLines, MARGIN, MARGIN + 40, 300);
  const right = block(doc, view.invoiceLines, PAGE_WIDTH - MARGIN - 200, MARGIN + 4, 200, 9.5);
  let y = Math.max(left, right) + 10;
  y = block(doc, view.patientLines, MARGIN, y, PAGE_WIDTH - 2 * MARGIN);
  y = block(doc, view.practitionerLines, MARGIN, y + 4, PAGE_WIDTH - 2 * MARGIN);
  return y + 10;
}

/** Room for the explanation under the totals: its few sentences wrap to at most four lines. */
const EXPLANATION_HEIGHT = 4 * 12;
const TOTALS_HEIGHT = (view: AccountView) =>
  (view.totals.length + view.paymentLines.length) * 13 + 40 + EXPLANATION_HEIGHT;

function totals(doc: Doc, view: AccountView, y: number): void {
  let at = y + 6;
  const labelX = PAGE_WIDTH - MARGIN - 260;
  for (const [label, amount] of view.totals) {
    const strong = label === 'Total' || label === 'Balance due';
    doc.font(strong ? 'bold' : 'regular').fontSize(9);
    doc.text(label, labelX, at, { width: 160, lineBreak: false });
    doc.text(amount, labelX + 160, at, { width: 100, align: 'right', lineBreak: false });
    at += 13;
  }
  doc.font('regular').fontSize(9);
  const width = PAGE_WIDTH - 2 * MARGIN;
  doc.text(view.explanation, MARGIN, at + 6, { width });
  at += 6 + doc.heightOfString(view.explanation, { width });
  doc
    .font('bold')
    .fontSize(9)
    .text('How to pay', MARGIN, at + 8, { lineBreak: false });
  block(doc, view.paymentLines, MARGIN, at + 21, PAGE_WIDTH - 2 * MARGIN);
}

function pageNumbers(doc: Doc, view: AccountView): void {
  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    doc.page.margins.bottom = 0;
    doc
      .font('regular')
      .fontSize(7.5)
      .text(
        `${view.title} ${view.invoiceLines[0]?.split(': ')[1] ?? ''} · page ${i + 1} of ${range.count}`,
        MARGIN,
        PAGE_HEIGHT - MARGIN,
        {
          width: PAGE_WIDTH - 2 * MARGIN,
          align: 'center',
          lineBreak: false,
        },
      );
  }
}

/** The account as PDF bytes; `createdAt` is the document's creation time in its metadata. */
export function renderAccountPdf(view: AccountView, createdAt: Date): Promise<Buffer> {
  const { regular, bold } = loadFonts();
  const doc = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    bufferPages: true,
    autoFirstPage: true,
    info: {
      Title: `${view.title} ${view.invoiceLines[0] ?? ''}`,
      Author: view.practiceName,
      CreationDate: createdAt,
    },
  });
  doc.registerFont('regular', regular);
  doc.registerFont('bold', bold);
  const chunks: Buffer[] = [];
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  doc.lineWidth(0.5);
  let y = tableHead(doc, header(doc, view));
  for (const line of view.lines) {
    const height = rowHeight(doc, line);
    if (y + height > BOTTOM) {
      doc.addPage();
      y = tableHead(doc, MARGIN);
    }
    row(doc, y, (c) => line[c.key], false, height);
    y += height;
  }
  if (y + TOTALS_HEIGHT(view) > BOTTOM) {
    doc.addPage();
    y = MARGIN;
  }
  totals(doc, view, y);
  pageNumbers(doc, view);
  doc.end();
  return done;
}
