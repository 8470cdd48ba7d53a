import { q } from './eval-queries.js';

/**
 * Needs against the held-out catalog, phrased as agents working on real tasks state them,
 * mostly without the words their right service uses, and several aimed between near-duplicates.
 * Written before any measurement on this set; never used to choose a weight.
 */

export const HELDOUT_QUERIES = [
  // travel
  q('cheapest way to get from Lisbon to Berlin by plane next Friday', ['flight-search'], ['rail-times']),
  q('do I need permission to enter Japan with an Indian passport', ['visa-rules']),
  q('is my 6pm connection out of Frankfurt running late', ['flight-status']),
  q('how many kilos can I take in the hold on an economy ticket', ['baggage']),
  q('plan three days of sightseeing in Rome around museums and food', ['itinerary']),
  q('check this selfie is acceptable for my ID document application', ['passport-photo']),

  // hiring
  q('what should we pay a senior data engineer in Amsterdam', ['salary-bench']),
  q('rank these 40 applicants for the nurse opening', ['cv-screen'], ['skills-extract']),
  q('write the advert for our new warehouse supervisor role', ['job-ad'], ['listing-copy']),
  q('how many days off does this employee still have this year', ['leave-balance']),
  q('why are people quitting, based on what they told us when leaving', ['exit-survey']),

  // real estate
  q('what is this apartment worth if I sell it now', ['avm'], ['comps']),
  q('is buying this flat to let out a good return', ['rental-yield']),
  q('who legally owns the plot next to mine and is there a charge on it', ['title-search']),
  q('check whether this person applying to rent my house can afford it', ['tenant-screen']),
  q('is the area around 12 Elm Street safe', ['crime-stats']),

  // speech near-duplicates
  q('turn the recording of our call into a written transcript', ['asr'], ['chapters']),
  q('read this bedtime story aloud in a warm voice', ['voice-synth']),
  q('what song is playing in this clip from the cafe', ['track-id'], ['sheet-music']),
  q('write down the notes of my piano improvisation so others can play it', ['sheet-music'], ['track-id']),
  q('make my episode as loud as Spotify expects', ['loudness']),
  q('my French learners want feedback on how they say words', ['pronunciation']),
  q('interpret my spoken English into spoken Spanish live', ['speech-translate'], ['asr', 'voice-synth']),

  // vision near-duplicates
  q('digitize my grandmother’s handwritten recipe cards', ['handwriting'], ['print-ocr']),
  q('get the text off a photo of a street sign', ['print-ocr'], ['handwriting']),
  q('which number plate did the gate camera capture', ['anpr']),
  q('what flower is this in my garden', ['plant-id'], ['leaf-disease']),
  q('the leaves of my tomato plants have brown spots, what is wrong', ['leaf-disease'], ['plant-id']),
  q('bring colour to a 1940s black-and-white wedding picture', ['colorize'], ['restore']),
  q('fix the cracks and stains on an old scanned portrait', ['restore'], ['colorize']),
  q('find duplicates of this product shot in our catalogue', ['similar-images']),
  q('check that the squat form in this gym photo is correct', ['pose']),

  // logistics
  q('where is my package right now', ['parcel-track']),
  q('what code do I put on the customs form for bamboo toothbrushes', ['hs-code']),
  q('price to move 12 pallets from Rotterdam to Milan', ['freight-quote'], ['pallet-pack']),
  q('best order to visit 30 drop-offs with one van before noon', ['route-opt']),
  q('when should we restock each SKU so we never run out', ['reorder-point']),
  q('find a factory that can make custom enamel pins', ['supplier-find']),

  // software operations
  q('our service started throwing strange errors overnight, spot the unusual log lines', ['log-anomaly']),
  q('can this endpoint be exploited with a quote in the id parameter', ['sqli-scan']),
  q('how will our site cope with 5,000 simultaneous users', ['load-test']),
  q('are any of our npm packages GPL', ['license-check']),
  q('summarize what changed between v2.3 and v2.4 for users', ['changelog'], ['commit-msg']),
  q('how much will this Kubernetes setup cost us each month on AWS', ['cloud-cost']),

  // writing near-duplicates
  q('did this student copy parts of the essay from websites', ['plagiarism'], ['ai-detect']),
  q('was this cover letter written by ChatGPT', ['ai-detect'], ['plagiarism']),
  q('make my complaint email sound less angry', ['tone']),
  q('translate our iOS app into German and Japanese', ['ui-strings'], ['menu-translate']),
  q('format this DOI as an APA reference', ['citations']),
  q('explain this insurance letter so a 10-year-old understands it', ['simplify'], ['lab-explain']),

  // money near-duplicates
  q('sort my card spending into groceries, rent and fun', ['txn-categorize'], ['budget']),
  q('will this supplier company be able to pay us in 90 days', ['credit-risk'], ['credit-score']),
  q('what does the bureau say about my own borrowing history', ['credit-score'], ['credit-risk']),
  q('will I have enough money when I stop working at 65', ['retirement']),
  q('a customer disputed a payment with their bank, help me fight it', ['chargeback']),
  q('nudge clients who have not paid us yet', ['invoice-chaser']),

  // health near-duplicates
  q('how many calories are on this plate, from a picture', ['meal-photo'], ['label-maker']),
  q('is this heartbeat recording showing atrial fibrillation', ['ecg'], ['hrv']),
  q('does this cake contain nuts or gluten', ['allergens'], ['label-maker']),
  q('how much paracetamol for a 14 kg toddler', ['pediatric-dose']),
  q('what do my cholesterol numbers mean', ['lab-explain']),
  q('which shots does my baby need at 12 months in the UK', ['vaccines']),

  // education
  q('make ten test questions from this biology chapter', ['quiz'], ['flashcards']),
  q('show me how to solve 3x + 5 = 20 one step at a time', ['math-steps']),
  q('is this book right for my 8-year-old’s reading ability', ['reading-level'], ['simplify']),
  q('watch the candidate during the online certification test', ['proctor']),

  // compliance and marketing
  q('a customer asked us for all the personal data we hold on her', ['dsar']),
  q('does our website set tracking cookies before the visitor agrees', ['cookie-scan'], ['accessibility']),
  q('has anyone already patented a folding bicycle helmet like ours', ['prior-art']),
  q('can a blind person use our checkout page', ['accessibility']),
  q('which of our subscribers will cancel soon', ['churn'], ['segments']),
  q('what are people saying about our brand online', ['brand-mentions']),
  q('write a reply to this one-star review', ['reviews-reply']),

  // environment, transport, food
  q('how much CO2 does my trip to New York emit', ['flight-co2'], ['ship-co2']),
  q('is it dangerous to light a campfire in this valley this week', ['wildfire']),
  q('when is low water at Saint-Malo tomorrow', ['tides']),
  q('where can I plug in my Tesla near the station', ['ev-charge'], ['parking']),
  q('does this used car have unfixed safety problems from the factory', ['recall'], ['vin']),
  q('what can I cook with eggs, spinach and leftover rice', ['fridge-recipes'], ['meal-plan']),
  q('which red goes with lamb', ['wine-pair']),
  q('how long until my pizza arrives', ['delivery-eta']),
  q('plan my meals for the week at 1800 kcal, vegetarian', ['meal-plan'], ['fridge-recipes']),

  // typos
  q('trasncribe this intervew audio', ['asr'], [], true),
  q('wen is hgh tide in brest tomorow', ['tides'], [], true),
  q('chek which clients still owe us and remnd them to pay', ['invoice-chaser'], ['reconcile'], true),
];
