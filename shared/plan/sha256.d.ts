/** SHA-256 digest of bytes. */
export declare function sha256(bytes: Uint8Array): Uint8Array;
/** SHA-256 of a UTF-8 string, as lowercase hex. */
export declare function sha256Hex(text: string): string;
/** SHA-256 of a UTF-8 string, as standard base64 (for `Content-Digest`, RFC 9530). */
export declare function sha256Base64(text: string): string;
