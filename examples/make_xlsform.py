"""Write examples/health-multilingual.xlsx, an XLSForm in English, French and Arabic.

The form shows what deniable reads from an XLSForm (docs/xlsform.md): three languages (Arabic
is written right to left), a note, hints, a plain question (`smokes`) that gates two randomized
ones by skip logic, and one question of each type: yes/no, categorical, select-all, integer and
text. The demo (`make demo`) creates its survey from the copy in aggregator/examples/.

    python examples/make_xlsform.py          # writes both copies
    deniable-aggregator survey import examples/health-multilingual.xlsx

tests/aggregator/test_xlsform.py checks that the committed workbooks hold what this writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openpyxl import Workbook

ROOT = Path(__file__).resolve().parent.parent
OUTPUTS = (
    ROOT / "examples" / "health-multilingual.xlsx",
    ROOT / "aggregator" / "examples" / "health-multilingual.xlsx",
)
LANGUAGES = ("English (en)", "French (fr)", "Arabic (ar)")

SURVEY_HEADERS = [
    "type",
    "name",
    *(f"label::{language}" for language in LANGUAGES),
    *(f"hint::{language}" for language in LANGUAGES),
    "relevant",
    "constraint",
    "required",
    "deniable::mechanism",
    "deniable::epsilon",
    "deniable::candidates",
]


def _row(
    kind: str,
    name: str,
    labels: tuple[str, str, str],
    hints: tuple[str, str, str] | tuple[None, None, None] = (None, None, None),
    *,
    relevant: str | None = None,
    constraint: str | None = None,
    mechanism: str | None = None,
    epsilon: float | None = None,
    candidates: str | None = None,
) -> list[Any]:
    required = None if kind == "note" else "yes"
    return [
        kind,
        name,
        *labels,
        *hints,
        relevant,
        constraint,
        required,
        mechanism,
        epsilon,
        candidates,
    ]


SURVEY = [
    _row(
        "note",
        "intro",
        (
            "Your answers to the randomized questions are changed on your device before they "
            "are sent, so no one can know your true answer.",
            "Vos réponses aux questions randomisées sont modifiées sur votre appareil avant "
            "l'envoi : personne ne peut connaître votre vraie réponse.",
            "تُغيَّر إجاباتك على الأسئلة العشوائية على جهازك قبل إرسالها، فلا يستطيع أحد "
            "معرفة إجابتك الحقيقية.",
        ),
    ),
    _row(
        "integer",
        "age",
        ("How old are you?", "Quel âge avez-vous ?", "كم عمرك؟"),
        ("In whole years.", "En années révolues.", "بالسنوات الكاملة."),
        constraint=". >= 18 and . <= 99",
        mechanism="none",
    ),
    _row(
        "select_one region",
        "region",
        ("Where do you live?", "Où habitez-vous ?", "أين تسكن؟"),
        mechanism="none",
    ),
    _row(
        "select_one yes_no",
        "smokes",
        ("Do you smoke tobacco?", "Fumez-vous du tabac ?", "هل تدخن التبغ؟"),
        mechanism="none",
    ),
    _row(
        "integer",
        "cigarettes",
        (
            "How many cigarettes do you smoke on a typical day?",
            "Combien de cigarettes fumez-vous un jour ordinaire ?",
            "كم سيجارة تدخن في يوم عادي؟",
        ),
        ("From 0 to 60.", "De 0 à 60.", "من 0 إلى 60."),
        relevant="${smokes} = 'yes'",
        constraint=". >= 0 and . <= 60",
        mechanism="onebit",
        epsilon=1,
    ),
    _row(
        "select_one yes_no",
        "quit",
        (
            "Have you tried to stop smoking in the last 12 months?",
            "Avez-vous essayé d'arrêter de fumer au cours des 12 derniers mois ?",
            "هل حاولت الإقلاع عن التدخين خلال الأشهر الاثني عشر الماضية؟",
        ),
        relevant="${smokes} = 'yes'",
        mechanism="rr",
        epsilon=1,
    ),
    _row(
        "select_one often",
        "alcohol",
        (
            "How often do you drink alcohol?",
            "À quelle fréquence buvez-vous de l'alcool ?",
            "كم مرة تشرب الكحول؟",
        ),
        mechanism="grr",
        epsilon=2,
    ),
    _row(
        "select_multiple drugs",
        "used",
        (
            "Which of these have you ever used?",
            "Lesquelles de ces substances avez-vous déjà consommées ?",
            "أيٌّ من هذه المواد تعاطيتَ من قبل؟",
        ),
        (
            "Select all that apply.",
            "Cochez toutes les réponses qui s'appliquent.",
            "اختر كل ما ينطبق.",
        ),
        mechanism="rr",
        epsilon=2,
    ),
    _row(
        "text",
        "town",
        (
            "In which town did you grow up?",
            "Dans quelle ville avez-vous grandi ?",
            "في أي مدينة نشأت؟",
        ),
        mechanism="hcms",
        epsilon=2,
        candidates="casablanca\nrabat\nfes\nmarrakesh\ntangier",
    ),
]

CHOICES_HEADERS = ["list_name", "name", *(f"label::{language}" for language in LANGUAGES)]
CHOICES = [
    ["yes_no", "yes", "Yes", "Oui", "نعم"],
    ["yes_no", "no", "No", "Non", "لا"],
    ["region", "north", "North", "Nord", "الشمال"],
    ["region", "south", "South", "Sud", "الجنوب"],
    ["region", "east", "East", "Est", "الشرق"],
    ["region", "west", "West", "Ouest", "الغرب"],
    ["often", "never", "Never", "Jamais", "أبدًا"],
    ["often", "monthly", "Monthly or less", "Une fois par mois ou moins", "مرة في الشهر أو أقل"],
    ["often", "weekly", "Every week", "Chaque semaine", "كل أسبوع"],
    ["often", "daily", "Every day or nearly", "Tous les jours ou presque", "كل يوم تقريبًا"],
    ["drugs", "cannabis", "Cannabis", "Cannabis", "القنّب"],
    ["drugs", "ecstasy", "Ecstasy", "Ecstasy", "الإكستاسي"],
    ["drugs", "cocaine", "Cocaine", "Cocaïne", "الكوكايين"],
]

SETTINGS_HEADERS = [
    "form_id",
    "form_title",
    "form_title::French (fr)",
    "form_title::Arabic (ar)",
    "default_language",
    "deniable::description",
    "deniable::description::French (fr)",
    "deniable::description::Arabic (ar)",
]
SETTINGS = [
    [
        "health-multilingual",
        "Health in three languages (example)",
        "La santé en trois langues (exemple)",
        "الصحة بثلاث لغات (مثال)",
        "English (en)",
        "An example survey written as an XLSForm.",
        "Un exemple de questionnaire écrit en XLSForm.",
        "مثال على استبيان مكتوب بصيغة XLSForm.",
    ]
]


def build() -> Workbook:
    """The example workbook: survey, choices and settings sheets."""
    workbook = Workbook()
    survey = workbook.active
    survey.title = "survey"
    for name, headers, rows in (
        ("survey", SURVEY_HEADERS, SURVEY),
        ("choices", CHOICES_HEADERS, CHOICES),
        ("settings", SETTINGS_HEADERS, SETTINGS),
    ):
        sheet = survey if name == "survey" else workbook.create_sheet(name)
        sheet.append(headers)
        for row in rows:
            sheet.append(row)
    return workbook


def main() -> None:
    workbook = build()
    for path in OUTPUTS:
        workbook.save(path)
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
