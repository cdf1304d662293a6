import { Test, type TestingModule } from '@nestjs/testing';
import type { ModuleMetadata } from '@nestjs/common';

/** Compiles and initializes a Nest testing module (workers start at init, as in a real app). */
export async function startApp(metadata: ModuleMetadata): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule(metadata).compile();
  await moduleRef.init();
  return moduleRef;
}
