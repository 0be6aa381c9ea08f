// A few RSA key pairs generated ahead of need, so issuing a certificate on the request path takes about a millisecond
// instead of the ~50 ms a 2048-bit key costs. Bounded; refilled in the background; never hands a key out twice.
import { generateRsaKeyPair, type RsaKeyPair } from './pki.ts';

export class RsaKeyPool {
  readonly #ready: RsaKeyPair[] = [];
  readonly #size: number;
  #generating = 0;
  #closed = false;
  #whenFilled: (() => void)[] = [];

  /** `size` keys are kept ready; filling starts at once. */
  constructor(size = 4) {
    this.#size = size;
    this.#refill();
  }

  /** Keys ready to hand out now. */
  get available(): number {
    return this.#ready.length;
  }

  /** A key from the pool, or a fresh one when the pool is empty (a burst of creations): never blocks the loop. */
  take(): Promise<RsaKeyPair> {
    const keys = this.#ready.pop();
    this.#refill();
    return keys === undefined ? generateRsaKeyPair() : Promise.resolve(keys);
  }

  /** Resolves once the pool is full (startup, tests that measure the warm path). */
  filled(): Promise<void> {
    if (this.#closed || this.#ready.length >= this.#size) return Promise.resolve();
    return new Promise((resolve) => this.#whenFilled.push(resolve));
  }

  close(): void {
    this.#closed = true;
    this.#ready.length = 0;
    this.#settleWaiters();
  }

  #settleWaiters(): void {
    for (const resolve of this.#whenFilled.splice(0)) resolve();
  }

  #refill(): void {
    if (this.#ready.length >= this.#size) this.#settleWaiters();
    // One key at a time: generation runs on libuv's thread pool, which file and DNS work share.
    if (this.#closed || this.#generating > 0 || this.#ready.length >= this.#size) return;
    this.#generating++;
    generateRsaKeyPair().then(
      (keys) => {
        this.#generating--;
        if (this.#closed) return;
        this.#ready.push(keys);
        this.#refill();
      },
      () => {
        // Out of resources: the next take() generates its own key and tries again.
        this.#generating--;
      },
    );
  }
}
