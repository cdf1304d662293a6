export default async function globalTeardown() {
  await globalThis.__echomqRedis?.stop();
}
