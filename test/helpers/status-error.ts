// The Status a piece of pure conversion code refuses with, for unit tests that check refusals.
// Never swallows anything else: an error that is not a StatusError is rethrown.
import { StatusError } from '../../lib/errors/status-error.ts';

/** The StatusError `fn` throws; fails the test when it throws nothing or another error. */
export function thrownStatus(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (error) {
    if (error instanceof StatusError) return error;
    throw error;
  }
  throw new Error('expected a StatusError');
}
