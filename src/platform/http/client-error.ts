// Owns the answer to a request Node's HTTP parser refused before Fastify saw it: a request line or
// headers over the size limit (431), a request not finished in time (408) or one that is not HTTP
// (400). Written straight to the socket, as a Problem with a fresh request id in the body and in
// X-Request-Id, like every other error answer; the connection is closed afterwards.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { randomToken } from '../ids.ts';
import { AppError, problemOf } from './errors.ts';

function refusalOf(error: NodeJS.ErrnoException): AppError {
  if (error.code === 'HPE_HEADER_OVERFLOW')
    return new AppError('headers_too_large', 'The request line and headers are larger than 16 KB.');
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new AppError('request_timeout', 'The request was not received in time; send it again.');
  return new AppError('invalid_request', 'The request is not valid HTTP/1.1.');
}

export function clientErrorHandler(config: { readonly errorsDocUrl: string }, log?: FastifyBaseLogger) {
  return (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const refusal = refusalOf(error);
    const requestId = `req_${randomToken(12)}`;
    log?.debug({ err: error, requestId }, 'request refused by the HTTP parser');
    if (socket.writable) {
      const body = JSON.stringify(problemOf(refusal, requestId, config.errorsDocUrl));
      socket.write(
        [
          `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}`,
          'Content-Type: application/json; charset=utf-8',
          `Content-Length: ${Buffer.byteLength(body)}`,
          `X-Request-Id: ${requestId}`,
          'Cache-Control: no-store',
          'X-Content-Type-Options: nosniff',
          'Connection: close',
          '',
          body,
        ].join('\r\n'),
      );
    }
    socket.destroy(error);
  };
}
