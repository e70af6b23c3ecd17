export const digitSum = (number) =>
  [...String(number)].reduce((sum, digit) => sum + Number(digit), 0);
