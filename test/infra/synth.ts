import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnResource, type PolicyValidationPluginReport, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { REPO_ROOT } from '../../infra/bundling.js';
import type { HefestoConfig } from '../../infra/config.js';
import { addHefesto, addNagChecks } from '../../infra/hefesto-app.js';
import type { HefestoStack } from '../../infra/hefesto-stack.js';

export interface Synthesized {
  stack: HefestoStack;
  template: Template;
  /** cdk-nag AwsSolutions findings left after the acknowledgements. */
  nag: PolicyValidationPluginReport;
  /** The cloud assembly directory (bundled assets under `asset.{hash}/`). */
  assemblyDir: string;
}

/** The feature flags of cdk.json, so tests synthesize what `cdk synth` does. */
const cdkContext = (): Record<string, unknown> =>
  JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')).context;

/**
 * Synthesizes one stack the way `npm run synth` does (cdk.json context, cdk-nag plugin:
 * synthesis throws on an unacknowledged finding), into a temporary directory. With
 * `bundle: false` the functions get a placeholder asset (CDK's `aws:cdk:bundling-stacks`),
 * for the configs whose bundles another synth has checked already.
 */
export const synth = (config: HefestoConfig, options: { bundle: boolean }): Synthesized => {
  const app = new App({
    context: { ...cdkContext(), ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }) },
    outdir: mkdtempSync(join(tmpdir(), 'hefesto-cdk-')),
  });
  const stack = addHefesto(app, config);
  addNagChecks(app);
  const assembly = app.synth();
  return {
    stack,
    template: Template.fromStack(stack),
    nag: new AwsSolutionsChecks(app).validateScope(stack),
    assemblyDir: assembly.directory,
  };
};

export const logicalId = (stack: Stack, construct: { node: { defaultChild?: unknown } }): string =>
  stack.getLogicalId(construct.node.defaultChild as CfnResource);

type Resource = { Type: string; Properties?: Record<string, unknown>; [key: string]: unknown };

export const resourcesOf = (template: Template, type: string): Record<string, Resource> =>
  template.findResources(type) as Record<string, Resource>;

export interface Statement {
  Action: string | string[];
  Resource: unknown;
  Effect: string;
  Condition?: Record<string, Record<string, string>>;
  Sid?: string;
}

const statementsOf = (policy: Resource): Statement[] =>
  (policy.Properties?.PolicyDocument as { Statement: Statement[] } | undefined)?.Statement ?? [];

/** Every statement of every inline policy of the template. */
export const allStatements = (template: Template): Statement[] =>
  Object.values(resourcesOf(template, 'AWS::IAM::Policy')).flatMap(statementsOf);

/** The statements of the inline policies attached to `roleId`. */
export const statementsOfRole = (template: Template, roleId: string): Statement[] =>
  Object.values(resourcesOf(template, 'AWS::IAM::Policy'))
    .filter((p) => JSON.stringify(p.Properties?.Roles).includes(`"${roleId}"`))
    .flatMap(statementsOf);

export const actionsOf = (statements: Statement[]): string[] =>
  [...new Set(statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])))].sort();
