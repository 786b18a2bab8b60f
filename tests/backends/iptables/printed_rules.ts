/**
 * Rendered rules and how iptables 1.8.9 prints them back (`-S`, legacy and nft alike) after a
 * restore: canonical_rule_test.ts checks canonicalRule against them, tests/e2e/canonical_rule_test.ts
 * checks them against the real iptables.
 */
/** A rule as the renderer writes it, and as iptables prints it back (checked by tests/e2e). */
export const PRINTED: readonly (readonly [string, string])[] = [
  [
    '-A KUBE-SERVICES -m comment --comment "ns1/svc0:p80 cluster IP" -m tcp -p tcp -d 172.30.0.1 --dport 80 -j KUBE-SVC-N2W5ODEWYO3BGDTP',
    '-A KUBE-SERVICES -d 172.30.0.1/32 -p tcp -m comment --comment "ns1/svc0:p80 cluster IP" -m tcp --dport 80 -j KUBE-SVC-N2W5ODEWYO3BGDTP',
  ],
  [
    '-A KUBE-SVC-N2W5ODEWYO3BGDTP -m comment --comment "ns1/svc0:p80 cluster IP" -m tcp -p tcp -d 172.30.0.1 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ',
    '-A KUBE-SVC-N2W5ODEWYO3BGDTP ! -s 10.0.0.0/8 -d 172.30.0.1/32 -p tcp -m comment --comment "ns1/svc0:p80 cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ',
  ],
  [
    "-A KUBE-POSTROUTING -m mark ! --mark 0x00004000/0x00004000 -j RETURN",
    "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
  ],
  [
    "-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000",
    "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000",
  ],
  [
    "-A KUBE-POSTROUTING -j MARK --xor-mark 0x00004000",
    "-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0",
  ],
  [
    "-A KUBE-SEP-KGERR442R7KUYFPK -s 10.0.0.2 -j KUBE-MARK-MASQ",
    "-A KUBE-SEP-KGERR442R7KUYFPK -s 10.0.0.2/32 -j KUBE-MARK-MASQ",
  ],
  [
    '-A KUBE-SVC-X -m comment --comment "ns1/svc0:p80 -> 10.0.0.2:80" -m statistic --mode random --probability 0.1000000000 -j KUBE-SEP-Y',
    '-A KUBE-SVC-X -m comment --comment "ns1/svc0:p80 -> 10.0.0.2:80" -m statistic --mode random --probability 0.10000000009 -j KUBE-SEP-Y',
  ],
  [
    "-A KUBE-SEP-Y -m comment --comment ns1/svc0:p80 -m tcp -p tcp -j DNAT --to-destination 10.0.0.2:80",
    '-A KUBE-SEP-Y -p tcp -m comment --comment "ns1/svc0:p80" -m tcp -j DNAT --to-destination 10.0.0.2:80',
  ],
  [
    "-A KUBE-SVC-X -m recent --name KUBE-SEP-Y --rcheck --seconds 10800 --reap -j KUBE-SEP-Y",
    "-A KUBE-SVC-X -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-Y --mask 255.255.255.255 --rsource -j KUBE-SEP-Y",
  ],
  [
    "-A KUBE-SEP-Y -m recent --name KUBE-SEP-Y --set -m tcp -p tcp -j DNAT --to-destination 10.0.0.2:80",
    "-A KUBE-SEP-Y -p tcp -m recent --set --name KUBE-SEP-Y --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 10.0.0.2:80",
  ],
  [
    "-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS",
    "-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS",
  ],
  [
    "-A KUBE-POSTROUTING -m comment --comment kubernetes -j MASQUERADE --random-fully",
    "-A KUBE-POSTROUTING -m comment --comment kubernetes -j MASQUERADE --random-fully",
  ],
  [
    '-A KUBE-FW-X -m comment --comment "other traffic to ns1/b:p80 will be dropped"',
    '-A KUBE-FW-X -m comment --comment "other traffic to ns1/b:p80 will be dropped"',
  ],
  [
    "-A KUBE-EXT-X -i cni0 ! -s 1.2.3.0/24 -j RETURN",
    "-A KUBE-EXT-X ! -s 1.2.3.0/24 -i cni0 -j RETURN",
  ],
];

/** The same for IPv6 (ip6tables). */
export const PRINTED6: readonly (readonly [string, string])[] = [
  [
    "-A KUBE-SEP-Y -s fd00:10::1 -m recent --name KUBE-SEP-Y --set -j KUBE-MARK-MASQ",
    "-A KUBE-SEP-Y -s fd00:10::1/128 -m recent --set --name KUBE-SEP-Y --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff --rsource -j KUBE-MARK-MASQ",
  ],
  [
    '-A KUBE-SVC-X -m comment --comment "ns1/svc0:p80 cluster IP" -m tcp -p tcp -d fd00:30::1 --dport 80 ! -s fd00:10::/64 -j KUBE-MARK-MASQ',
    '-A KUBE-SVC-X ! -s fd00:10::/64 -d fd00:30::1/128 -p tcp -m comment --comment "ns1/svc0:p80 cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ',
  ],
  [
    "-A KUBE-SEP-Y -m tcp -p tcp -j DNAT --to-destination [fd00:10::1]:80",
    "-A KUBE-SEP-Y -p tcp -m tcp -j DNAT --to-destination [fd00:10::1]:80",
  ],
];
