import { describe, expect, test, xtest } from '@jest/globals';
import { digitSum } from './digit-sum';

describe('digitSum', () => {
  test('zero', () => {
    expect(digitSum(0)).toEqual(0);
  });

  xtest('several digits', () => {
    expect(digitSum(1907)).toEqual(17);
  });

  xit('many nines', () => {
    expect(digitSum(999999)).toEqual(54);
  });
});
