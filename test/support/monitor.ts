import { connect, type Socket } from 'node:net';

/**
 * Every command a redis-server runs, read off a raw MONITOR connection as its arguments and the
 * address of the client that sent it. A plain
 * socket rather than ioredis's monitor(): ioredis 6 mixed MONITOR's lines into its reply queue
 * ("Command queue state error"). Only commands whose arguments hold no quote are parsed exactly,
 * which is all the scripts' calls here (keys, ids, tokens, numbers).
 */
export async function monitorCommands(host: string, port: number, onCommand: (args: string[], source: string) => void): Promise<() => void> {
  const socket: Socket = connect(port, host);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let buffered = '';
  let started!: () => void;
  const ready = new Promise<void>((resolve) => (started = resolve));
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let end: number;
    while ((end = buffered.indexOf('\r\n')) >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (line === '+OK') started();
      // +<time> [<db> <client address>] "arg" "arg" ...
      else if (line.startsWith('+')) onCommand([...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((match) => match[1]), /^\+\S+ \[\d+ ([^\]]+)\]/.exec(line)?.[1] ?? '');
    }
  });
  socket.write('MONITOR\r\n');
  await ready;
  return () => socket.destroy();
}
