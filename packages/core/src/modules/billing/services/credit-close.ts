/**
 * What closing a credit reservation gives back, worked out once for every path that closes one
 * (the ORM path of `settle`/`release` and the prepared paths of `closeOnly` on each database).
 */
export interface ClosePlan {
  kind: 'settlement' | 'release';
  /** Grant credits given back while the grant's month is the balance's; none once it ended. */
  grantBack: number;
  purchaseBack: number;
  /** The ledger entry's reason while the grant's month is the balance's, and once it ended. */
  reasonSameMonth: string;
  reasonMonthEnded: string;
}

/** The plan of closing `reservation` as `status` with `used` credits charged (grant credits are used first). */
export function closePlan(
  reservation: { amount: number; grantPart: number; purchasePart: number; reason: string },
  status: 'settled' | 'released',
  used: number,
  reason: string | undefined,
): ClosePlan {
  const usedGrant = Math.min(used, reservation.grantPart);
  const grantBack = reservation.grantPart - usedGrant;
  const purchaseBack = reservation.purchasePart - (used - usedGrant);
  const label = status === 'settled' ? `Settled ${used} of ${reservation.amount} reserved for ${reservation.reason}` : `Released ${reservation.amount} reserved for ${reservation.reason}`;
  const why = reason ? `: ${reason}` : '';
  return {
    kind: status === 'settled' ? 'settlement' : 'release',
    grantBack,
    purchaseBack,
    reasonSameMonth: `${label}${why}`,
    reasonMonthEnded: `${label}${why}${grantBack > 0 ? ` (${grantBack} plan credits not returned: their month ended)` : ''}`,
  };
}

/** The ledger movement of a close, once it is known whether the grant's month is still the balance's. */
export function closeMovement(plan: ClosePlan, sameMonth: boolean): { grantDelta: number; purchaseDelta: number; reason: string } {
  return { grantDelta: sameMonth ? plan.grantBack : 0, purchaseDelta: plan.purchaseBack, reason: sameMonth ? plan.reasonSameMonth : plan.reasonMonthEnded };
}
