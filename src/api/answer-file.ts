// Owns answering a document instead of JSON (a patient's account as PDF): what a handler hands back,
// how the OpenAPI document describes it, and how it is sent once the transaction that read it has
// committed, with a Content-Disposition that names the file.
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
export async function sendFile(
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
