// The package as apps meet it: `npm pack` of this repository, installed from the tarball (not the
// source tree) into fresh consumer apps, each built with its own TypeScript and run against a Redis
// this test starts (or REDIS_URL). A job goes through a @Processor in every Nest app:
//
//   nest12-esm       Nest 12, "type": "module", tsconfig as `nest new` makes it (nodenext)
//   nest12-cjs       Nest 12, CommonJS, tsconfig as `nest new --type cjs` makes it (nodenext)
//   nest12-commonjs  Nest 12, CommonJS, "module": "commonjs"
//   nest11-cjs       Nest 11, CommonJS, "module": "commonjs" and TypeScript 5.9, and its Jest spec
//                    (ts-jest, CommonJS) run as the app's `npm test` runs it
//   nest10-cjs       Nest 10, the same shape as nest11-cjs
//   plain            plain Node: index.cjs requires the package and every subpath, index.mjs imports
//                    them, both check that the other way reaches the same copy; and tsc finds every
//                    entry's types under module commonjs, node16, nodenext (CommonJS and ES files)
//                    and bundler
//
//   npm run test:consumers        (installs from the npm registry: about a minute with a warm cache)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startRedis } from '../support/redis-process.js';

const run = promisify(execFile);
const here = fileURLToPath(new URL('.', import.meta.url));
const repo = join(here, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'echomq-consumers-'));

const NEST_12 = { '@nestjs/common': '12.6.3', '@nestjs/core': '12.6.3', 'reflect-metadata': '0.2.2', rxjs: '7.8.2' };
const NEST_11 = { '@nestjs/common': '11.2.12', '@nestjs/core': '11.2.12', 'reflect-metadata': '0.2.2', rxjs: '7.8.2' };
const NEST_10 = { '@nestjs/common': '10.4.9', '@nestjs/core': '10.4.9', 'reflect-metadata': '0.2.2', rxjs: '7.8.2' };
const TYPES_NODE = { '@types/node': '20.19.43' };
const JEST = { '@nestjs/testing': '11.2.12', '@types/jest': '30.0.0', jest: '30.5.2', 'ts-jest': '29.4.15' };

// The compiler options `nest new` writes (@nestjs/schematics 12, application/files/ts and ts-esm).
const NEST_NEW_TSCONFIG = {
  module: 'nodenext', moduleResolution: 'nodenext', resolvePackageJsonExports: true, esModuleInterop: true,
  isolatedModules: true, declaration: true, removeComments: true, emitDecoratorMetadata: true,
  experimentalDecorators: true, allowSyntheticDefaultImports: true, target: 'ES2023', types: ['node'],
  sourceMap: true, outDir: './dist', rootDir: '.', incremental: true, skipLibCheck: true, strict: false,
  strictPropertyInitialization: false,
};
// The compiler options of a Nest app made before `nest new` moved to nodenext (Nest 10 and early 11).
const COMMONJS_TSCONFIG = {
  module: 'commonjs', declaration: true, removeComments: true, emitDecoratorMetadata: true,
  experimentalDecorators: true, allowSyntheticDefaultImports: true, target: 'ES2021', sourceMap: true,
  outDir: './dist', rootDir: '.', incremental: true, skipLibCheck: true, strictNullChecks: false,
  noImplicitAny: false, types: ['node', 'jest'],
};

const NEST_APPS = [
  { name: 'nest12-esm', type: 'module', dependencies: NEST_12, devDependencies: { typescript: '6.0.3', ...TYPES_NODE }, tsconfig: NEST_NEW_TSCONFIG },
  { name: 'nest12-cjs', dependencies: NEST_12, devDependencies: { typescript: '6.0.3', ...TYPES_NODE }, tsconfig: NEST_NEW_TSCONFIG },
  {
    name: 'nest12-commonjs', dependencies: NEST_12, devDependencies: { typescript: '6.0.3', ...TYPES_NODE },
    tsconfig: { ...COMMONJS_TSCONFIG, types: ['node'] },
  },
  {
    name: 'nest11-cjs', dependencies: { ...NEST_11, '@nestjs/terminus': '11.1.1' }, devDependencies: { typescript: '5.9.3', ...TYPES_NODE, ...JEST },
    tsconfig: COMMONJS_TSCONFIG, jest: true,
  },
  {
    name: 'nest10-cjs', dependencies: NEST_10, devDependencies: { typescript: '5.9.3', ...TYPES_NODE, ...JEST, '@nestjs/testing': '10.4.9' },
    tsconfig: COMMONJS_TSCONFIG, jest: true,
  },
];

// The optional peers, so that every subpath loads.
const PEERS = {
  '@bull-board/api': '9.10.2', '@nestjs/terminus': '12.2.0', '@opentelemetry/api': '1.10.0', 'prom-client': '15.1.3',
};
// The types of every entry, under each setting an app may have.
const TYPE_SETTINGS = {
  commonjs: { compilerOptions: { module: 'commonjs' }, files: ['types.ts'] },
  node16: { compilerOptions: { module: 'node16' }, files: ['types.ts', 'types.mts'] },
  nodenext: { compilerOptions: { module: 'nodenext' }, files: ['types.ts', 'types.mts'] },
  bundler: { compilerOptions: { module: 'esnext', moduleResolution: 'bundler' }, files: ['types.ts'] },
};

let redis;
let tarball;
const env = { ...process.env };

/** Runs `command` in `cwd`; on failure the error carries what it printed. */
async function sh(cwd, command, args, extraEnv = {}) {
  try {
    return await run(command, args, { cwd, env: { ...env, ...extraEnv }, maxBuffer: 64 * 1024 * 1024, timeout: 600_000 });
  } catch (error) {
    error.message += `\n--- stdout\n${error.stdout}\n--- stderr\n${error.stderr}`;
    throw error;
  }
}

const json = (value) => `${JSON.stringify(value, null, 2)}\n`;
const lastLine = (text) => JSON.parse(text.trim().split('\n').at(-1));
const node = (cwd, args, prefix) => sh(cwd, process.execPath, args, { ECHOMQ_PREFIX: `consumer-${prefix}` });
const tsc = (cwd, project) => sh(cwd, process.execPath, ['node_modules/typescript/bin/tsc', '-p', project]);

/** Writes an app's folder and installs it from the registry and the tarball. */
async function install(dir, packageJson) {
  writeFileSync(join(dir, 'package.json'), json({ name: packageJson.name, version: '1.0.0', private: true, ...packageJson }));
  await sh(dir, 'npm', ['install', '--no-audit', '--no-fund', '--loglevel=error']);
}

function writeNestApp(app) {
  const dir = join(work, app.name);
  cpSync(join(here, 'nest-app', 'src'), join(dir, 'src'), { recursive: true });
  if (app.jest) cpSync(join(here, 'nest-app', 'spec'), join(dir, 'src'), { recursive: true });
  // Apps on "module": "commonjs" write their relative imports without an extension (Jest's
  // resolver, unlike tsc, does not map ./x.js to ./x.ts).
  if (app.tsconfig.module === 'commonjs') {
    for (const name of readdirSync(join(dir, 'src'))) {
      const file = join(dir, 'src', name);
      writeFileSync(file, readFileSync(file, 'utf8').replace(/(from '\.\/[^']+)\.js'/g, "$1'"));
    }
  }
  writeFileSync(join(dir, 'tsconfig.json'), json({ compilerOptions: app.tsconfig }));
  writeFileSync(join(dir, 'tsconfig.build.json'), json({ extends: './tsconfig.json', include: ['src'], exclude: ['**/*.spec.ts'] }));
  const packageJson = {
    name: app.name,
    ...(app.type ? { type: app.type } : {}),
    dependencies: { ...app.dependencies, '@echomq/nestjs': `file:${tarball}` },
    devDependencies: app.devDependencies,
  };
  // Jest as the Nest 10 and 11 templates configure it.
  if (app.jest) {
    packageJson.jest = {
      moduleFileExtensions: ['js', 'json', 'ts'], rootDir: 'src', testRegex: '.*\\.spec\\.ts$',
      transform: { '^.+\\.(t|j)s$': 'ts-jest' }, testEnvironment: 'node',
    };
  }
  return install(dir, packageJson);
}

function writePlainApp() {
  const dir = join(work, 'plain');
  cpSync(join(here, 'plain'), dir, { recursive: true });
  // The same lines as an ES module file (.mts): the plain app is CommonJS, so types.ts is a CommonJS file.
  writeFileSync(join(dir, 'types.mts'), readFileSync(join(dir, 'types.ts'), 'utf8'));
  for (const [setting, { compilerOptions, files }] of Object.entries(TYPE_SETTINGS)) {
    writeFileSync(join(dir, `tsconfig.${setting}.json`), json({
      compilerOptions: { target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], ...compilerOptions },
      files,
    }));
  }
  return install(dir, {
    name: 'plain',
    dependencies: { ...NEST_12, ...PEERS, '@echomq/nestjs': `file:${tarball}` },
    devDependencies: { typescript: '5.9.3', ...TYPES_NODE },
  });
}

before(async () => {
  if (!env.REDIS_URL) {
    redis = await startRedis();
    env.REDIS_URL = redis.url;
  }
  const { stdout } = await sh(repo, 'npm', ['pack', '--json', '--pack-destination', work]);
  tarball = join(work, JSON.parse(stdout.slice(stdout.indexOf('[')))[0].filename);
  // The installs wait on the network and the disk, not the CPU: all at once.
  await Promise.all([...NEST_APPS.map(writeNestApp), writePlainApp()]);
}, { timeout: 900_000 });

after(async () => {
  await redis?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('Nest apps, installed from the packed tarball', () => {
  for (const app of NEST_APPS) {
    it(`${app.name}: builds, and a job runs through its @Processor`, async () => {
      const dir = join(work, app.name);
      await tsc(dir, 'tsconfig.build.json');
      const { stdout } = await node(dir, ['dist/src/main.js'], app.name);
      const { id, result } = lastLine(stdout);
      assert.ok(id);
      assert.deepEqual(result, { file: 'intro.mp3', format: 'mp3' });
    });

    if (app.dependencies['@nestjs/terminus']) {
      it(`${app.name}: loads @echomq/nestjs/terminus with @nestjs/terminus ${app.dependencies['@nestjs/terminus']}`, async () => {
        const { stdout } = await node(join(work, app.name), ['-p', "Object.keys(require('@echomq/nestjs/terminus')).join()"], 'unused');
        assert.equal(stdout.trim(), 'EchoMQHealthIndicator,EchoMQHealthModule');
      });
    }

    if (app.jest) {
      it(`${app.name}: its Jest spec (ts-jest, CommonJS) loads the package and runs a job`, async () => {
        const dir = join(work, app.name);
        const { stderr } = await sh(dir, process.execPath, ['node_modules/jest/bin/jest.js', '--ci'], { ECHOMQ_PREFIX: `consumer-${app.name}-jest` });
        assert.match(stderr, /Tests:\s+1 passed, 1 total/);
      });
    }
  }
});

describe('a plain Node app, installed from the packed tarball', () => {
  const dir = () => join(work, 'plain');

  it('requires the package and every subpath, import() reaches the same copy, and a job runs', async () => {
    const { stdout } = await node(dir(), ['index.cjs'], 'plain-cjs');
    const { loaded, result } = lastLine(stdout);
    assert.equal(result, 42);
    assert.deepEqual(Object.keys(loaded), ['.', 'internal', 'bull-board', 'terminus', 'prometheus', 'otel']);
    for (const [subpath, count] of Object.entries(loaded)) assert.ok(count > 0, `${subpath} exports nothing`);
  });

  it('imports the package and its subpaths as ES modules, require() reaches the same copy, and a job runs', async () => {
    const { stdout } = await node(dir(), ['index.mjs'], 'plain-esm');
    assert.deepEqual(lastLine(stdout), { result: 42 });
  });

  for (const setting of Object.keys(TYPE_SETTINGS)) {
    it(`finds every entry's types under module ${setting}`, async () => {
      await tsc(dir(), `tsconfig.${setting}.json`);
    });
  }

  it('ships the built code, the scripts and the docs, not the sources or the tests', () => {
    const shipped = readdirSync(join(dir(), 'node_modules', '@echomq', 'nestjs')).sort();
    assert.deepEqual(shipped, ['README.md', 'conformance', 'dist', 'docs', 'lua', 'package.json']);
    assert.deepEqual(readdirSync(join(dir(), 'node_modules', '@echomq', 'nestjs', 'dist')).sort(), ['cjs', 'esm']);
  });
});
