/**
 * The worked example of issue 25, which the prefix-tree cases, the API tests and the browser tests all use:
 * 10.0.0.0/16 holding a /24 (with a host inside it), a /25 and two hosts, so 386 of its 65536 addresses
 * are used, and the free space left as its 16 maximal blocks.
 */
export const EXAMPLE_NETWORKS = ['10.0.0.0/16', '10.0.0.0/24', '10.0.1.0/25', '10.0.0.1/32', '10.0.2.1/32', '10.0.2.2/32'];

export const EXAMPLE_MAXIMAL_FREE = [
  '10.0.1.128/25',
  '10.0.2.0/32',
  '10.0.2.3/32',
  '10.0.2.4/30',
  '10.0.2.8/29',
  '10.0.2.16/28',
  '10.0.2.32/27',
  '10.0.2.64/26',
  '10.0.2.128/25',
  '10.0.3.0/24',
  '10.0.4.0/22',
  '10.0.8.0/21',
  '10.0.16.0/20',
  '10.0.32.0/19',
  '10.0.64.0/18',
  '10.0.128.0/17',
];
