/** Whether `work` settles before `deadline` (epoch ms); the work itself is neither stopped nor awaited past it. */
export async function settledBy(work: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work.then(() => true as const, () => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
