//
// This is only a SKELETON file for the 'Digit Sum' exercise. It's been provided as a
// convenience to get you started writing code faster.
//

export const digitSum = (number) => {
  throw new Error('Remove this statement and implement this function');
};
