// Owns the answers drawn after their transaction has committed instead of a stored JSON body: a document
// (a patient's account as PDF, sent with a Content-Disposition that names the file) or a JSON text
// streamed piece by piece (a patient's whole record); and how the OpenAPI document describes a document.
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { TSchema } from 'typebox';

/** A document answer: its bytes made by `render`, sent with its type and a file name to save it as. */
export interface AnswerFile {
  contentType: string;
  filename: string;
  render: () => Promise<Buffer>;
}

/** The route's success response as the OpenAPI document shows it: JSON, or a document of `produces`. */
export function successResponse(response: TSchema, produces: string | undefined): unknown {
  if (!produces) return response;
  return {
    description: (response as { description?: string }).description ?? 'The document.',
    content: { [produces]: { schema: response } },
  };
}

/** Draws the file and sends it as an attachment, with the answer's status and headers. */
async function sendFile(
  reply: FastifyReply,
  status: number,
  headers: Record<string, string>,
  file: AnswerFile,
): Promise<FastifyReply> {
  const bytes = await file.render();
  return reply
    .code(status)
    .headers(headers)
    .header('content-disposition', `attachment; filename="${file.filename.replace(/[^\w.-]/g, '_')}"`)
    .type(file.contentType)
    .send(bytes);
}

/** What a success sends once its transaction has committed, instead of the stored JSON body. */
export type AfterCommit = { file: AnswerFile } | { stream: () => AsyncIterable<string> };

/** The handler's document or stream, where it answered one. */
export function afterCommitOf(result: {
  file?: AnswerFile | undefined;
  stream?: (() => AsyncIterable<string>) | undefined;
}): AfterCommit | undefined {
  if (result.file) return { file: result.file };
  if (result.stream) return { stream: result.stream };
  return undefined;
}

/** Sends the document, or the JSON text as its pieces come (each read as the caller takes the last). */
export async function sendAfterCommit(
  reply: FastifyReply,
  status: number,
  headers: Record<string, string>,
  later: AfterCommit,
): Promise<FastifyReply> {
  if ('file' in later) return sendFile(reply, status, headers, later.file);
  return reply
    .code(status)
    .headers(headers)
    .type('application/json; charset=utf-8')
    .send(Readable.from(later.stream(), { objectMode: false }));
}
