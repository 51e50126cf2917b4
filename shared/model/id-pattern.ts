/** The id pattern every engine-accepted id must match (SPEC §9). */
export const ID_PATTERN = /^[A-Za-z0-9_-]{8,80}$/;
