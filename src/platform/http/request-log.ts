// Owns the per-request log line: one line when the answer is complete, carrying what Fastify's two
// lines (incoming request, request completed) carried between them: the request (method, route and
// request id, by the `req` serializer of src/app.ts), the status and the response time. A request
// that never completes (the client went away) leaves no line, as it left no completion line before.
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (this.isLogDisabled(request)) return;
    const line = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}
