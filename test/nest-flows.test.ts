import 'reflect-metadata';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  EchoMQModule, FlowProducer, InjectFlowProducer, Process, Processor, Queue, getFlowProducerToken, getQueueToken,
  type EchoMQFlowProducerOptionsFactory, type Job,
} from '../lib/index.js';
import { startApp } from './support/nest.js';
import { eventually, newClient, onCluster, testConnection, uniqueQueueName } from './support/redis.js';

// EchoMQModule.registerFlowProducer / registerFlowProducerAsync and @InjectFlowProducer (docs/flows.md, "NestJS").

const LIMITS = 'LIMITS';
@Module({ providers: [{ provide: LIMITS, useValue: { maxDataSize: 64 } }], exports: [LIMITS] })
class LimitsModule {}

describe('EchoMQModule flow producers', () => {
  let app: TestingModule | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('injects a registered FlowProducer whose flow the processors complete; app.close closes it', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    @Injectable()
    class Reports {
      constructor(@InjectFlowProducer('reports') readonly flow: FlowProducer) {}
      build(pages: number) {
        return this.flow.add({
          name: 'report', queueName: parents,
          children: Array.from({ length: pages }, (_, page) => ({ name: 'page', queueName: children, data: { page } })),
        });
      }
    }
    @Processor(children)
    class Pages {
      @Process() render(job: Job<{ page: number }>) {
        return job.data.page * 10;
      }
    }
    @Processor(parents)
    class Assembler {
      @Process() async assemble(job: Job) {
        const values = await job.getChildrenValues<number>();
        return Object.values(values).sort((a, b) => a - b);
      }
    }
    @Module({ imports: [EchoMQModule.registerFlowProducer({ name: 'reports' })], providers: [Reports], exports: [Reports] })
    class ReportsModule {}
    app = await startApp({
      imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue(parents), ReportsModule],
      providers: [Pages, Assembler],
    });
    const reports = app.get(Reports, { strict: false });
    expect(app.get(getFlowProducerToken('reports'), { strict: false })).toBe(reports.flow);
    const tree = await reports.build(3);
    const parentQueue = app.get<Queue>(getQueueToken(parents), { strict: false });
    await eventually(async () => (await parentQueue.getJob(tree.job.id))?.returnvalue !== undefined, 10_000, 'the parent completed');
    expect((await parentQueue.getJob(tree.job.id))!.returnvalue).toEqual([0, 10, 20]);
    const read = await reports.flow.getFlow({ id: tree.job.id, queueName: parents });
    expect(read.children!.map((c) => c.job!.returnvalue).sort()).toEqual([0, 10, 20]);

    const close = jest.spyOn(reports.flow, 'close');
    await app.close();
    app = undefined;
    expect(close).toHaveBeenCalledTimes(1);
    await expect(reports.build(1)).rejects.toThrow(/closed/);
    // The shared connection (the configuration's) is closed with the app, unless the caller passed it (the cluster run).
    if (!onCluster) await eventually(() => reports.flow.client.status === 'end', 5_000, 'the shared connection to end');
  });

  it('registerFlowProducer() and @InjectFlowProducer() use the name "default", on the configuration\'s prefix', async () => {
    const name = uniqueQueueName('dflt');
    @Injectable()
    class Uses {
      constructor(@InjectFlowProducer() readonly flow: FlowProducer) {}
    }
    app = await startApp({
      imports: [
        EchoMQModule.forRoot('other', { connection: testConnection(), prefix: 'other' }),
        EchoMQModule.registerFlowProducer({ configKey: 'other' }),
      ],
      providers: [Uses],
    });
    const flow = app.get(Uses).flow;
    expect(app.get(getFlowProducerToken(), { strict: false })).toBe(flow);
    expect(getFlowProducerToken()).toBe(getFlowProducerToken('default'));
    const tree = await flow.add({ name: 'p', queueName: name, children: [{ name: 'c', queueName: name }] });
    expect(tree.children![0].job.parent!.queueKey).toBe(`other:{${name}}`);
    expect((await flow.getFlow({ id: tree.job.id, queueName: name })).job!.id).toBe(tree.job.id);
  });

  it('registerFlowProducerAsync takes its settings from useFactory (with imports and inject) or useClass', async () => {
    const name = uniqueQueueName('async');
    const created = jest.fn();
    @Injectable()
    class Settings implements EchoMQFlowProducerOptionsFactory {
      createFlowProducerOptions() {
        created();
        return { prefix: 'byclass' };
      }
    }
    @Injectable()
    class Uses {
      constructor(@InjectFlowProducer('small') readonly small: FlowProducer, @InjectFlowProducer('classy') readonly classy: FlowProducer) {}
    }
    app = await startApp({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection() }),
        EchoMQModule.registerFlowProducerAsync(
          { name: 'small', imports: [LimitsModule], inject: [LIMITS], useFactory: (limits: { maxDataSize: number }) => limits },
          { name: 'classy', useClass: Settings },
        ),
      ],
      providers: [Uses],
    });
    const { small, classy } = app.get(Uses);
    expect(created).toHaveBeenCalledTimes(1);
    await expect(small.add({ name: 'big', queueName: name, data: 'x'.repeat(100) })).rejects.toMatchObject({ name: 'EchoMQOptionError' });
    const added = await classy.add({ name: 'p', queueName: name });
    expect((await classy.getFlow({ id: added.job.id, queueName: name })).job!.name).toBe('p');
    expect((await small.getFlow({ id: added.job.id, queueName: name })).job).toBeUndefined(); // other prefix
  });

  it('refuses one name on two configurations, a bad name, and an async registration without a factory', async () => {
    expect(() => EchoMQModule.registerFlowProducer({ name: '' })).toThrow(/non-empty string/);
    expect(() => EchoMQModule.registerFlowProducerAsync({ name: 'x' })).toThrow(/useFactory, useClass or useExisting/);
    @Module({ imports: [EchoMQModule.registerFlowProducer({ name: 'twice' })] })
    class A {}
    @Module({ imports: [EchoMQModule.registerFlowProducer({ name: 'twice', configKey: 'other' })] })
    class B {}
    const client = newClient(); // the caller's: the failed init leaves it open, for this test to close
    try {
      await expect(startApp({
        imports: [EchoMQModule.forRoot({ connection: client }), EchoMQModule.forRoot('other', { connection: client }), A, B],
      })).rejects.toThrow(/flow producer "twice" is registered with the configuration/);
    } finally {
      client.disconnect();
    }
  });
});
