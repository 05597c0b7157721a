/**
 * The word lists of the one-time-code extractor (code.ts). Kept apart so that adding a language
 * is a change of data, not of logic. All regexes are case-insensitive and Unicode-aware.
 */

const notLetter = "(?<![\\p{L}])";
const endLetter = "(?![\\p{L}])";

/**
 * Words that announce a one-time code. Latin stems may end a compound (Bestätigungscode,
 * WhatsApp-Code, verificatiecode, kodunuz, kodu); short words stand alone (PIN in "shopping").
 */
export const KEYWORD = new RegExp(
  [
    "code|c[oó]digo|codice|kode|kod|код|κωδικ|קוד|şifre|sifre|(?:verifizierungs|bestätigungs|sicherheits)nummer",
    `${notLetter}(?:otps?|pin|m?tan|token|clave|senha|contraseña|password|passwort|einmalpasswort|пароль|parola|hasło|haslo|verify|verification)${endLetter}`,
    "m[ãa] (?:x[áa]c|otp)|رمز|كود|كلمة المرور|कोड|ओटीपी|पासवर्ड|รหัส",
    "验证码|校验码|动态码|动态密码|验证代码|代码|口令|取件码",
    "確認コード|認証コード|認証番号|確認番号|ワンタイムパスワード|パスコード",
    "인증\\s?번호|인증코드|보안코드|승인번호",
  ].join("|"),
  "giu",
);

/**
 * A word whose "<word> code" is an identifier, not a one-time code ("Store code: 0042", "merchant
 * code 5411", "Order code 1234"): such a "code" is no keyword, and a number right after it is no
 * candidate. Only before "code": "Dear customer OTP is 482913" keeps its OTP. Not here: words of a
 * code that is typed once (login, access, security, delivery, pickup, transaction, account ...).
 */
export const IDENTIFIER_NOUN =
  /^(?:order|store|shop|outlet|branch|merchant|dealer|vendor|seller|partner|agent|employee|staff|customer|client|member|membership|referral|ref|reference|product|item|sku|booking|reservation|gift|offer|sort|swift|ifsc|tax)(?:'?s)?$/i;

/** Around a keyword (before it, or just after): the code is not a one-time code (postal, promo, tracking, error ...). */
export const NOT_OTP_BEFORE =
  /(?:zip|postal|post|area|country|error|promo|discount|coupon|cupom|cup[oó]n|voucher|gutschein|rabatt|tracking|rastreio|rastreamento|seguimiento|barras|bar|промо|скидк|купон|优惠|折扣|쿠폰|할인|クーポン|割引)[\s-]*[\p{L}\s-]{0,3}$/iu;
export const NOT_OTP_AFTER =
  /^[\p{L}]*\s*(?:de\s+)?(?:postal|pocztowy|promo|de barras|de rastreio|de rastreamento|de seguimiento|de descuento|de desconto|d[aeo] (?:pedido|cliente|producto|produto|tienda|loja|sucursal|referencia|referência|reserva)(?![\p{L}]))/iu;

/** Promotions in a text: letter-bearing candidates (SAVE20, BDAY25) are then coupons, never taken. */
export const PROMO =
  /promo|coupon|cupom|cup[oó]n|voucher|discount|descuento|desconto|rabatt|gutschein|réduction|\d\s?%\s?off|скидк|промокод|优惠|쿠폰|クーポン/iu;

/** Words right before a number that make it an order, account, phone, seat ... rather than a code. */
export const NOT_CODE_PREFIX = new RegExp(
  `(?:${notLetter}(?:${[
    "ending(?: in| with)?|ends? in|card|account|acct|a/c|order|ref|reference|no|nr|n°|№|#|ticket|invoice|booking|flight",
    "train|room|zone|unit|suite|tel|call|phone|total|amount|receipt|version|seat|gate|tracking|shipment",
    "pedido|commande|bestellung|rechnung|sendung|terminada en|final|заказ|номер|счёт|счет|رقم|طلب|ऑर्डर",
  ].join("|")})|尾号|订单号?|电话|客服|주문번호|예약번호|予約番号|伝票番号|注文番号)\\s*[:：.#]?\\s*$`,
  "iu",
);

/** A currency (or unit) written before or after a number makes it an amount. */
export const CURRENCY_BEFORE = /(?<![\p{L}])(?:usd|eur|gbp|inr|rs\.?|r\$|rp\.?|rub|pln|tl|vnd|cop|brl|sar|aed|[₹$€£¥₽₩])\s?$/iu;
export const UNIT_AFTER =
  /^\s?(?:usd|eur|gbp|rub|руб|р\.?(?![\p{L}])|pln|zł|zl|tl|try|inr|vnd|cop|brl|sar|aed|грн|uah|bath|baht|บาท|ر\.س|درهم|dollars?|euros?|gb|mb|kb|[%°₴₹$€£¥₽元円원₩])/iu;

/** A code the text says is spent: "was already used", "has expired" (not "expires in 10 minutes"). */
export const SPENT =
  /already used|was used|has been used|(?:has |is )?expired|no longer valid|invalid|incorrect|ya (?:fue|ha sido) usad|expirou|abgelaufen|bereits verwendet|expiré|déjà utilisé|истёк|истек|уже использован|已失效|已过期|已使用|만료|사용된|期限切れ|使用済み/iu;

/** Where a clause ends: a code and its keyword are in one clause. */
export const CLAUSE_BREAK = /[.!?。！？।]\s|,\s|[，、;；]|\n/u;

/**
 * The TLDs of domains named by digits only ("12306.cn", "163.com", "58.com"), in lower case as
 * they are written: any other "482913.Valid" is a code ending a sentence, not a domain.
 */
export const NUMERIC_DOMAIN = /\.(?:com|net|org|cn|ru|in|io|co|cc|info|top|xyz|vip|hk|tw|jp|kr|vn)$/;
