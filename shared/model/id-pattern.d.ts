/** The id pattern every engine-accepted id must match (SPEC §9). */
export declare const ID_PATTERN: RegExp;
