import type { Exchange, Failure } from './runner.js';

/**
 * Failures the fuzz test finds that are known and being fixed elsewhere. A failure that
 * matches one is reported (with the exact request) but does not fail the test; each entry
 * names who fixes it, and goes away with the fix: the test says when an entry matched
 * nothing, so that a fixed issue cannot keep masking a new one.
 */
export interface KnownIssue {
  id: string;
  /** Who fixes it (issue item and branch). */
  owner: string;
  description: string;
  /** `earlier`: the exchanges of the same run before this one (what it may have stored). */
  matches(failure: Failure, earlier: Exchange[]): boolean;
}

// Every issue the fuzz test found in issue 11 is fixed (items 1, 2, 6 and the fork that wrote
// its snapshot before refusing an existing target). Add an entry here only with an owner.
export const KNOWN_ISSUES: KnownIssue[] = [];

export const knownIssueOf = (failure: Failure, earlier: Exchange[]): KnownIssue | undefined =>
  KNOWN_ISSUES.find((issue) => issue.matches(failure, earlier));
