/**
 * resourceVersions read as etcd revisions (src/kube/resource-version.ts):
 * the order of two, equal ones, values past what a double holds exactly, and
 * everything that is not such a number (then there is no answer).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rvNewer, rvNumber } from '../../src/kube/resource-version.js';

test('rvNumber: a decimal revision as a BigInt, exact past 2^53', () => {
  assert.equal(rvNumber('1'), 1n);
  assert.equal(rvNumber('0'), 0n);
  assert.equal(rvNumber('123456'), 123456n);
  // 2^53 + 1: Number() would read it as 2^53.
  assert.equal(rvNumber('9007199254740993'), 9007199254740993n);
  // The largest int64, etcd's largest revision: 19 digits.
  assert.equal(rvNumber('9223372036854775807'), 9223372036854775807n);
});

test('rvNumber: leading zeros are read as the number they spell', () => {
  assert.equal(rvNumber('007'), 7n);
  assert.equal(rvNumber('0000000000000000001'), 1n);
});

test('rvNumber: anything but 1 to 19 decimal digits is no number', () => {
  for (const rv of [undefined, '', ' ', '12 ', ' 12', '-1', '+1', '1.5', '1e3', '0x10', 'abc', '12a', '١٢', '12345678901234567890']) {
    assert.equal(rvNumber(rv), undefined, JSON.stringify(rv));
  }
});

test('rvNewer: bigger is newer, smaller and equal are not', () => {
  assert.equal(rvNewer('10', '9'), true); // as strings, '10' < '9'
  assert.equal(rvNewer('9', '10'), false);
  assert.equal(rvNewer('42', '42'), false);
  assert.equal(rvNewer('007', '7'), false);
  assert.equal(rvNewer('8', '007'), true);
});

test('rvNewer: past 2^53, neighbours still tell apart', () => {
  // As doubles both are 2^53: Number() would call them equal.
  assert.equal(rvNewer('9007199254740993', '9007199254740992'), true);
  assert.equal(rvNewer('9007199254740992', '9007199254740993'), false);
  assert.equal(rvNewer('9223372036854775807', '9223372036854775806'), true);
});

test('rvNewer: no answer when either side is not an etcd-style number', () => {
  for (const [a, b] of [
    ['5', undefined],
    [undefined, '5'],
    [undefined, undefined],
    ['5', ''],
    ['', '5'],
    ['5', 'abc'],
    ['abc', '5'],
    ['abc', 'abc'],
    ['5', '12345678901234567890'],
  ] as Array<[string | undefined, string | undefined]>) {
    assert.equal(rvNewer(a, b), undefined, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
});
